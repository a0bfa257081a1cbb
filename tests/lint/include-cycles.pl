#!/usr/bin/env perl
# include-cycles.pl [--known H1,H2]... ROOT DIR... - the include cycles among the C
# sources under ROOT/DIR... (part of check-layering.sh). One line a cycle, "A -> B -> A
# (file:line, ...)", and exit status 1 when there is one. --known names the headers of a
# cycle that is known and not yet broken: a cycle among their modules only is noted; one
# that takes in any other module fails.
#
# A module is a header together with the .c/.cu files that define what it declares (a
# header's functions and extern data; a file defining names of two headers joins them),
# so that a circle through implementations is seen: run.c includes ckpt.h, ckpt.c
# (which implements ckpt.h) includes run.h. A private header NAME_internal.h belongs to
# NAME.h's module, and each backend folder (runtime/cpu, runtime/cuda) is one module. A
# file that implements no header is a module of its own. A module
# depends on every module whose header one of its files includes (headers are matched
# by their file name after any path); a cycle is a strongly connected set of more than
# one module.
use strict;
use warnings;
use File::Find;
use File::Basename;

my @known;
while (@ARGV && $ARGV[0] eq '--known') {
    shift @ARGV;
    push @known, [split /,/, shift @ARGV];
}
my ($root, @dirs) = @ARGV;
chdir $root or die "include-cycles: $root: $!\n";
my @files;
find({wanted => sub { push @files, $File::Find::name if /\.(c|h|cu|cuh)$/ && -f },
      no_chdir => 1}, grep { -d } @dirs);
@files = sort @files;
my %path_of = map { basename($_) => $_ } @files;

my (%includes, %declares, %defines);
for my $f (@files) {
    open my $fh, '<', $f or next;
    local $/;
    my $s = <$fh>;
    close $fh;
    my $n = 0;
    for my $line (split /\n/, $s, -1) {
        $n++;
        push @{$includes{$f}}, [basename($1), $n] if $line =~ /^\s*#\s*include\s*"([^"]+)"/;
    }
    # the code alone: no comments, strings, characters or preprocessor lines
    $s =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'}{ }gs;
    $s =~ s/^\s*#(?:[^\n]*\\\n)*[^\n]*//mg;
    # statements and bodies at file scope (bodies and parentheses folded to markers)
    1 while $s =~ s/\([^()]*\)/\x01/g;
    1 while $s =~ s/\{[^{}]*\}/\x02/g;
    my $header = $f =~ /\.(h|cuh)$/;
    for my $st (split /;|(?<=\x02)/, $s) {
        $st =~ s/^\s+|\s+$//g;
        next if $st eq '' || $st =~ /^(typedef|static)\b/ || $st =~ /\bstatic\b/;
        if ($header) {
            next if $st =~ /\x02/;    # a struct, union or enum: no name is defined
            # a function (its name before the parameters), a function declared through
            # its type (RT_MUST_USE rt_op_OP rt_backend_OP) or data (extern T name[])
            next unless $st =~ /\s/;
            if ($st =~ /^[^\x01]*?(\w+)\s*\x01/ || $st =~ /(\w+)\s*(?:\[[^\]]*\])?$/) {
                push @{$declares{$f}}, $1;
            }
        } elsif ($st =~ /(\w+)\s*\x01\s*\x02$/ || $st =~ /(\w+)\s*(?:\[[^\]]*\])?\s*=/) {
            $defines{$1} = $f;       # a function's body, or data with its value
        }
    }
}

# modules: union-find over headers and the files that define what they declare
my %up;
sub top { my $x = shift; $up{$x} //= $x; $up{$x} = top($up{$x}) if $up{$x} ne $x; $up{$x} }
sub join2 { my ($a, $b) = map { top($_) } @_; $up{$a} = $b if $a ne $b }
top($_) for @files;
for my $h (keys %declares) {
    for my $name (@{$declares{$h}}) {
        join2($h, $defines{$name}) if defined $defines{$name} && $defines{$name} ne $h;
    }
}
# a private header, NAME_internal.h, is the inside of NAME.h's module; a backend
# (runtime/cpu, runtime/cuda: one table of ops and the kernels behind it) is one module
my %backend;
for my $f (@files) {
    join2($f, $path_of{"$1.h"}) if basename($f) =~ /^(\w+)_internal\.h$/ && $path_of{"$1.h"};
    if ($f =~ m{^(?:\./)?runtime/(cpu|cuda)/}) {
        if (defined $backend{$1}) { join2($f, $backend{$1}) } else { $backend{$1} = $f }
    }
}
my %members;
push @{$members{top($_)}}, $_ for @files;
my %label;
for my $m (keys %members) {
    my @h = grep { /\.(h|cuh)$/ } @{$members{$m}};
    $label{$m} = join('+', map { basename($_) } (@h ? @h : @{$members{$m}}));
}

# the module graph, each edge with the include lines that make it
my (%edge, %why);
for my $f (@files) {
    for my $inc (@{$includes{$f} // []}) {
        my ($name, $line) = @$inc;
        my $to = $path_of{$name} or next;
        my ($a, $b) = (top($f), top($to));
        next if $a eq $b;
        $edge{$a}{$b} = 1;
        push @{$why{$a}{$b}}, "$f:$line";
    }
}

# strongly connected components (Tarjan)
my ($index, @stack, %idx, %low, %on, @sccs) = (0);
sub visit {
    my $v = shift;
    $idx{$v} = $low{$v} = $index++;
    push @stack, $v;
    $on{$v} = 1;
    for my $w (sort keys %{$edge{$v} // {}}) {
        if (!defined $idx{$w}) { visit($w); $low{$v} = $low{$w} if $low{$w} < $low{$v} }
        elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v} }
    }
    if ($low{$v} == $idx{$v}) {
        my @c;
        while (1) { my $w = pop @stack; $on{$w} = 0; push @c, $w; last if $w eq $v }
        push @sccs, [@c] if @c > 1;
    }
}
visit($_) for grep { !defined $idx{$_} } sort keys %members;

# the modules of the known cycles
my %known_mod;
for my $k (@known) {
    for my $h (@$k) {
        $known_mod{top($path_of{$h})} = 1 if defined $path_of{$h};
    }
}

# one cycle of each component: the shortest way back to its first module that is not
# in a known cycle (so a new module in a known knot shows its own way round)
my $found = 0;
for my $c (@sccs) {
    my %in = map { $_ => 1 } @$c;
    my @order = sort { $label{$a} cmp $label{$b} } @$c;
    my @new = grep { !$known_mod{$_} } @order;
    my $start = @new ? $new[0] : $order[0];
    my %prev = ();
    my @queue = ($start);
    my $back;
    while (defined(my $v = shift @queue)) {
        for my $w (sort keys %{$edge{$v}}) {
            next unless $in{$w};
            if ($w eq $start) { $back = $v; last }
            next if exists $prev{$w};
            $prev{$w} = $v;
            push @queue, $w;
        }
        last if defined $back;
    }
    my @path = ($start);
    for (my $v = $back; $v ne $start; $v = $prev{$v}) { splice @path, 1, 0, $v }
    push @path, $start;
    my @lines = map { $why{$path[$_]}{$path[$_ + 1]}[0] } 0 .. $#path - 1;
    my $text = join(' -> ', map { $label{$_} } @path) . " (" . join(', ', @lines) . ")";
    if (!@new) {
        print "known include cycle (to be broken): $text\n";
        next;
    }
    print "include cycle: $text\n";
    $found = 1;
}
exit $found;

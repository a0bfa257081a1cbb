/* mg_plot.c - SVG line charts (see mg_plot.h).
 *
 * Layout: a plot box inside fixed margins (room for tick labels, axis labels and the
 * title); ticks at 1/2/5 x 10^k steps ("nice numbers", Heckbert 1990) chosen for about
 * 6 ticks on y and 8 on x; the legend sits in the box's top-right corner on a
 * translucent background. Lines are polylines split at non-finite values; a lone
 * point becomes a dot. Text goes through xml_text, so run names cannot inject markup.
 * Written with open_memstream: the SVG grows in one buffer, no size guessing.
 */
#include "mg_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char *mg_plot_color(int i)
{
    return palette[(unsigned)i % (sizeof palette / sizeof *palette)];
}

/* A "nice" number near x: 1, 2, 5 or 10 times a power of ten. */
static double nice(double x, int round_it)
{
    double e = floor(log10(x)), f = x / pow(10, e), nf;
    if (round_it) nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

typedef struct axis {
    double lo, hi;   /* data range shown */
    double t0, step; /* first tick and spacing */
    int nticks;
} axis;

static void axis_fit(axis *a, double lo, double hi, int want)
{
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-12 * (fabs(lo) + fabs(hi)) || hi == lo) {
        double d = lo == 0 ? 1 : fabs(lo) * 0.1;
        lo -= d;
        hi += d;
    }
    double step = nice((hi - lo) / (want - 1), 1);
    a->lo = floor(lo / step) * step;
    a->hi = ceil(hi / step) * step;
    a->step = step;
    a->t0 = a->lo;
    a->nticks = (int)floor((a->hi - a->lo) / step + 0.5) + 1;
}

/* Labels carry as many decimals as the tick step needs (0.0005 -> 4), so ticks of a
 * narrow range around a large value stay distinct ("30.0005", not "30"). */
static void tick_label(char *buf, size_t n, double v, double step, int log_y)
{
    if (log_y) {
        snprintf(buf, n, "%g", pow(10, v));
        return;
    }
    if (fabs(v) < step * 1e-9) v = 0;
    int dec = (int)ceil(-log10(step) - 1e-9);
    if (dec < 0) dec = 0;
    if (fabs(v) >= 1e7 || dec > 9) snprintf(buf, n, "%.4g", v);
    else snprintf(buf, n, "%.*f", dec, v);
}

typedef struct frame {
    double left, top, w, h;
    axis x, y;
    int log_y, log_x;
} frame;

static double px(const frame *fr, double x)
{
    if (fr->log_x) x = log10(x);
    return fr->left + (x - fr->x.lo) / (fr->x.hi - fr->x.lo) * fr->w;
}
static double py(const frame *fr, double y)
{
    return fr->top + fr->h - (y - fr->y.lo) / (fr->y.hi - fr->y.lo) * fr->h;
}

static int usable_y(const frame *fr, double y) { return isfinite(y) && (!fr->log_y || y > 0); }
static int usable_x(const frame *fr, double x) { return isfinite(x) && (!fr->log_x || x > 0); }
static double ty(const frame *fr, double y) { return fr->log_y ? log10(y) : y; }
static double sx(const mg_plot_series *s, size_t i) { return s->x ? s->x[i] : (double)i; }
/* Point i of s can be drawn (both coordinates on their axes). */
static int usable(const frame *fr, const mg_plot_series *s, size_t i)
{
    return usable_y(fr, s->y[i]) && usable_x(fr, sx(s, i));
}

static void draw_axes(FILE *f, const frame *fr, const mg_plot_opts *o, int width, int height)
{
    char lab[64];
    fputs("<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n", f);
    for (int i = 0; i < fr->y.nticks; i++) {
        double y = py(fr, fr->y.t0 + i * fr->y.step);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", fr->left, y,
                fr->left + fr->w, y);
    }
    for (int i = 0; i < fr->x.nticks; i++) {
        double v = fr->x.t0 + i * fr->x.step, x = px(fr, fr->log_x ? pow(10, v) : v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, fr->top, x,
                fr->top + fr->h);
    }
    fputs("</g>\n", f);
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#444\"/>\n",
            fr->left, fr->top, fr->w, fr->h);
    fputs("<g fill=\"#333\" font-size=\"11\">\n", f);
    for (int i = 0; i < fr->y.nticks; i++) {
        double v = fr->y.t0 + i * fr->y.step;
        tick_label(lab, sizeof lab, v, fr->y.step, fr->log_y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", fr->left - 6,
                py(fr, v) + 4, lab);
    }
    for (int i = 0; i < fr->x.nticks; i++) {
        double v = fr->x.t0 + i * fr->x.step;
        tick_label(lab, sizeof lab, v, fr->x.step, fr->log_x);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                px(fr, fr->log_x ? pow(10, v) : v), fr->top + fr->h + 16, lab);
    }
    fputs("</g>\n", f);
    if (o->title) {
        fprintf(f,
                "<text x=\"%.1f\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" "
                "font-weight=\"bold\">",
                width / 2.0);
        mg_html_put(f, o->title);
        fputs("</text>\n", f);
    }
    if (o->xlabel) {
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", fr->left + fr->w / 2,
                height - 8);
        mg_html_put(f, o->xlabel);
        fputs("</text>\n", f);
    }
    if (o->ylabel) {
        fprintf(f, "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">",
                fr->top + fr->h / 2);
        mg_html_put(f, o->ylabel);
        fputs("</text>\n", f);
    }
}

/* Emits the points of one series; long series keep the min and max of each pixel
 * column (in the order they occur) so the curve's envelope survives. */
static void draw_series(FILE *f, const frame *fr, const mg_plot_series *s, const char *color)
{
    size_t cols = (size_t)fr->w;
    int reduce = s->n > 2 * cols;
    int open = 0;
    size_t run_len = 0;
    double lastx = 0, lasty = 0;
    size_t i = 0;
    while (i < s->n) {
        size_t j = i + 1;
        double a = sx(s, i), ya = s->y[i], b = a, yb = ya;
        if (reduce && usable(fr, s, i)) {
            /* gather the pixel column of point i: [i, j) */
            long col = (long)(px(fr, a) - fr->left);
            size_t imin = i, imax = i;
            while (j < s->n && usable(fr, s, j) && (long)(px(fr, sx(s, j)) - fr->left) == col) {
                if (s->y[j] < s->y[imin]) imin = j;
                if (s->y[j] > s->y[imax]) imax = j;
                j++;
            }
            size_t first = imin < imax ? imin : imax, second = imin < imax ? imax : imin;
            a = sx(s, first), ya = s->y[first], b = sx(s, second), yb = s->y[second];
        }
        for (int k = 0; k < (a == b && ya == yb ? 1 : 2); k++) {
            double x = k ? b : a, y = k ? yb : ya;
            if (!usable_y(fr, y) || !usable_x(fr, x)) {
                if (open) fputs("\"/>\n", f);
                if (open && run_len == 1)
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", lastx,
                            lasty, color);
                open = 0;
                continue;
            }
            lastx = px(fr, x);
            lasty = py(fr, ty(fr, y));
            if (!open) {
                fprintf(f,
                        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" "
                        "stroke-linejoin=\"round\" points=\"",
                        color);
                open = 1;
                run_len = 0;
            }
            fprintf(f, "%s%.1f,%.1f", run_len ? " " : "", lastx, lasty);
            run_len++;
        }
        i = j;
    }
    if (open) fputs("\"/>\n", f);
    if (open && run_len == 1)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", lastx, lasty,
                color);
}

static void draw_legend(FILE *f, const frame *fr, const mg_plot_series *s, int n)
{
    int shown = 0;
    size_t longest = 0;
    for (int i = 0; i < n; i++)
        if (s[i].name) {
            shown++;
            if (strlen(s[i].name) > longest) longest = strlen(s[i].name);
        }
    if (!shown) return;
    if (longest > 40) longest = 40;
    double w = 34 + 6.5 * (double)longest, h = 8 + 16.0 * shown;
    double x0 = fr->left + fr->w - w - 8, y0 = fr->top + 8;
    fprintf(f,
            "<g font-size=\"11\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n",
            x0, y0, w, h);
    int row = 0;
    for (int i = 0; i < n; i++) {
        if (!s[i].name) continue;
        double y = y0 + 12 + 16.0 * row++;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2.5\"/>\n",
                x0 + 6, y, x0 + 24, y, mg_plot_color(i));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x0 + 30, y + 4);
        char name[160];
        snprintf(name, sizeof name, "%s", s[i].name);
        if (strlen(s[i].name) > 40) strcpy(name + 37, "...");
        mg_html_put(f, name);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

/* The data's x and y ranges over usable points; returns the number of them. */
static size_t data_range(const frame *fr, const mg_plot_series *s, int n, double *x0, double *x1,
                         double *y0, double *y1)
{
    size_t count = 0;
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            double x = sx(&s[k], i), y = s[k].y[i];
            if (!usable(fr, &s[k], i)) continue;
            y = ty(fr, y);
            if (fr->log_x) x = log10(x);
            count++;
            if (x < *x0) *x0 = x;
            if (x > *x1) *x1 = x;
            if (y < *y0) *y0 = y;
            if (y > *y1) *y1 = y;
        }
    return count;
}

/* FNV-1a over the series' names, lengths and end points and the frame. */
static unsigned long clip_id(const mg_plot_series *s, int n, const frame *fr)
{
    unsigned long h = 1469598103934665603ul;
    double vals[6] = {fr->x.lo, fr->x.hi, fr->y.lo, fr->y.hi, fr->w, fr->h};
    for (int k = -1; k < n; k++) {
        if (k >= 0) {
            vals[0] = (double)s[k].n;
            vals[1] = s[k].n ? s[k].y[0] : 0;
            vals[2] = s[k].n ? s[k].y[s[k].n - 1] : 0;
            vals[3] = s[k].n ? sx(&s[k], s[k].n - 1) : 0;
            for (const char *c = s[k].name; c && *c; c++)
                h = (h ^ (unsigned char)*c) * 1099511628211ul;
        }
        const unsigned char *b = (const unsigned char *)vals;
        for (size_t i = 0; i < sizeof vals; i++) h = (h ^ b[i]) * 1099511628211ul;
    }
    return h;
}

char *mg_plot_svg(const mg_plot_series *s, int n, const mg_plot_opts *o)
{
    static const mg_plot_opts defaults = {0};
    if (n < 0 || (n > 0 && !s)) return NULL;
    if (!o) o = &defaults;
    for (int i = 0; i < n; i++)
        if (s[i].n && !s[i].y) return NULL;
    int width = o->width > 0 ? o->width : 640, height = o->height > 0 ? o->height : 360;
    if (width < 160) width = 160;
    if (height < 120) height = 120;
    frame fr = {.top = o->title ? 30 : 12, .log_y = o->log_y, .log_x = o->log_x};
    double x0, x1, y0, y1;
    size_t count = data_range(&fr, s, n, &x0, &x1, &y0, &y1);
    if (!count) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (o->ymin < o->ymax) {
        y0 = o->log_y ? log10(o->ymin > 0 ? o->ymin : 1e-12) : o->ymin;
        y1 = o->log_y ? log10(o->ymax > 0 ? o->ymax : 1) : o->ymax;
    }
    axis_fit(&fr.x, x0, x1, 8);
    axis_fit(&fr.y, y0, y1, 6);
    if (o->log_x && fr.x.step < 1 && fr.x.hi - fr.x.lo >= 2) { /* whole decades */
        fr.x.lo = floor(x0), fr.x.hi = ceil(x1), fr.x.t0 = fr.x.lo;
        fr.x.step = fr.x.hi - fr.x.lo > 8 ? 2 : 1;
        if (fr.x.hi == fr.x.lo) fr.x.hi += 1;
        fr.x.nticks = (int)((fr.x.hi - fr.x.lo) / fr.x.step) + 1;
    }
    if (o->log_y && fr.y.step < 1 && fr.y.hi - fr.y.lo >= 2) {
        fr.y.lo = floor(y0), fr.y.hi = ceil(y1), fr.y.step = 1, fr.y.t0 = fr.y.lo;
        if (fr.y.hi == fr.y.lo) fr.y.hi += 1;
        fr.y.nticks = (int)(fr.y.hi - fr.y.lo) + 1;
    }
    /* room on the left for the widest y tick label (about 7 px a digit at 11 px) */
    size_t widest = 0;
    for (int i = 0; i < fr.y.nticks; i++) {
        char lab[64];
        tick_label(lab, sizeof lab, fr.y.t0 + i * fr.y.step, fr.y.step, fr.log_y);
        if (strlen(lab) > widest) widest = strlen(lab);
    }
    fr.left = 18 + 7.2 * (double)widest + (o->ylabel ? 18 : 0);
    if (fr.left < 40) fr.left = 40;
    fr.w = width - fr.left - 16;
    fr.h = height - fr.top - (o->xlabel ? 44 : 30);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\" font-size=\"12\">\n",
            width, height, width, height);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
    draw_axes(f, &fr, o, width, height);
    /* ids must differ between charts inlined in one page: derive one from content */
    unsigned long id = clip_id(s, n, &fr);
    fprintf(f,
            "<clipPath id=\"kp%lx\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\"/></clipPath>\n<g clip-path=\"url(#kp%lx)\">\n",
            id, fr.left, fr.top, fr.w, fr.h, id);
    for (int i = 0; i < n; i++) draw_series(f, &fr, &s[i], mg_plot_color(i));
    fputs("</g>\n", f);
    if (!count)
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#888\">no "
                "data</text>\n",
                fr.left + fr.w / 2, fr.top + fr.h / 2);
    draw_legend(f, &fr, s, n);
    fputs("</svg>\n", f);
    if (ferror(f)) {
        fclose(f);
        free(out);
        return NULL;
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

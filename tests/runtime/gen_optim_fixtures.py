#!/usr/bin/python3
"""Writes the PyTorch reference fixtures for tests/runtime/test_optim.c and
test_schedule.c. Run with Debian's torch:

    /usr/bin/python3 tests/runtime/gen_optim_fixtures.py tests/runtime

optim_fixtures.txt: for each optimiser/option combination, 3 float32 parameters
(sizes 7, 1, 33), 5 steps with a per-step learning rate and random gradients of
mixed magnitude; the parameters after every step and the optimiser state after
the last. Values are printed with 9 significant digits (exact for float32).

schedule_fixtures.txt: for each --schedule string, the learning rate torch's
scheduler gives at every optimiser step of a run (steps_per_epoch, epochs),
stepping the scheduler once an epoch (unit=epoch) or once a step (unit=step).

plateau_fixtures.txt: for each --schedule plateau string, a metric per epoch and the
learning rate torch's ReduceLROnPlateau gives each epoch (test_early_stop.c).
"""
import os
import sys

import numpy as np
import torch

SIZES = [7, 1, 33]
STEPS = 5


def fmt(values):
    return " ".join("%.9g" % float(v) for v in np.asarray(values, dtype=np.float32).ravel())


# name, kind, options, no_decay flags per parameter
OPTIM_CASES = [
    ("sgd_plain", "sgd", dict(lr=0.1), [0, 0, 0]),
    ("sgd_wd", "sgd", dict(lr=0.1, weight_decay=0.01), [0, 1, 0]),
    ("sgd_momentum", "sgd", dict(lr=0.05, momentum=0.9), [0, 0, 0]),
    ("sgd_momentum_dampening", "sgd",
     dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3), [0, 0, 0]),
    ("sgd_nesterov", "sgd",
     dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4), [0, 1, 0]),
    ("adam_default", "adam", dict(lr=1e-3), [0, 0, 0]),
    ("adam_wd", "adam", dict(lr=1e-2, weight_decay=0.1, betas=(0.8, 0.99), eps=1e-6),
     [0, 1, 0]),
    ("adamw_default", "adamw", dict(lr=1e-3), [0, 0, 0]),
    ("adamw_wd", "adamw", dict(lr=1e-2, weight_decay=0.1, betas=(0.85, 0.995)), [0, 1, 0]),
]


def make_optimizer(kind, opts, params, no_decay):
    opts = dict(opts)
    wd = opts.pop("weight_decay", None)
    decay = [p for p, nd in zip(params, no_decay) if not nd]
    groups = [{"params": decay}]
    if wd is not None:
        groups[0]["weight_decay"] = wd
    nd_params = [p for p, nd in zip(params, no_decay) if nd]
    if nd_params:
        groups.append({"params": nd_params, "weight_decay": 0.0})
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    return cls(groups, **opts)


def optim_case(out, name, kind, opts, no_decay, rng):
    params = [torch.tensor(rng.normal(0, 1, n).astype(np.float32), requires_grad=True)
              for n in SIZES]
    opt = make_optimizer(kind, opts, params, no_decay)
    d = {"momentum": 0.0, "dampening": 0.0, "nesterov": False, "betas": (0.9, 0.999),
         "eps": 1e-8, "weight_decay": 0.01 if kind == "adamw" else 0.0}
    d.update({k: v for k, v in opts.items()})
    out.write("case %s %s %d %d %.17g %.17g %d %.17g %.17g %.17g %.17g\n" % (
        name, kind, STEPS, len(SIZES), d["momentum"], d["dampening"], int(d["nesterov"]),
        d["betas"][0], d["betas"][1], d["eps"], d["weight_decay"]))
    out.write("nodecay %s\n" % " ".join(str(x) for x in no_decay))
    for i, p in enumerate(params):
        out.write("init %d %d %s\n" % (i, p.numel(), fmt(p.detach().numpy())))
    for s in range(1, STEPS + 1):
        lr = opts["lr"] * (1.0 - 0.15 * (s - 1))  # a schedule changes lr between steps
        for g in opt.param_groups:
            g["lr"] = lr
        out.write("lr %d %.17g\n" % (s, lr))
        for i, p in enumerate(params):
            scale = 10.0 ** rng.integers(-4, 1)  # mixed magnitudes: eps matters for Adam
            grad = (rng.normal(0, 1, p.numel()) * scale).astype(np.float32)
            p.grad = torch.tensor(grad)
            out.write("grad %d %d %s\n" % (s, i, fmt(grad)))
        opt.step()
        for i, p in enumerate(params):
            out.write("param %d %d %s\n" % (s, i, fmt(p.detach().numpy())))
    for i, p in enumerate(params):
        st = opt.state[p]
        for key in ("momentum_buffer", "exp_avg", "exp_avg_sq"):
            if key in st and st[key] is not None:
                out.write("state %s.%d %s\n" % (key, i, fmt(st[key].numpy())))
    out.write("end\n")


# spec string (parsed by rt_schedule_parse), base lr, steps_per_epoch, epochs, builder
def sched_cases():
    S = torch.optim.lr_scheduler

    def seq(warm, start, inner):
        return lambda o: S.SequentialLR(
            o, [S.LinearLR(o, start_factor=start, end_factor=1.0, total_iters=warm),
                inner(o)], milestones=[warm])

    return [
        ("constant", 0.1, 4, 5, None, "epoch"),
        ("step:3:0.5", 0.1, 4, 10, lambda o: S.StepLR(o, step_size=3, gamma=0.5), "epoch"),
        ("step step_size=5 gamma=0.1 unit=step", 0.2, 7, 4,
         lambda o: S.StepLR(o, step_size=5, gamma=0.1), "step"),
        ("cosine", 0.1, 3, 8, lambda o: S.CosineAnnealingLR(o, T_max=8), "epoch"),
        ("cosine:20:0.001 unit=step", 0.05, 10, 5,
         lambda o: S.CosineAnnealingLR(o, T_max=20, eta_min=0.001), "step"),
        ("cosine warmup=3 warmup_start=0.1", 0.1, 2, 10,
         seq(3, 0.1, lambda o: S.CosineAnnealingLR(o, T_max=7)), "epoch"),
        ("step:2:0.5,warmup=2,warmup_start=0.25", 0.1, 3, 8,
         seq(2, 0.25, lambda o: S.StepLR(o, step_size=2, gamma=0.5)), "epoch"),
        ("constant warmup=4", 0.3, 1, 8, lambda o: S.LinearLR(o, start_factor=0.1,
                                                              total_iters=4), "epoch"),
        ("multistep:3,5:0.5", 0.1, 2, 8, lambda o: S.MultiStepLR(o, milestones=[3, 5], gamma=0.5),
         "epoch"),
        ("multistep:7,12,20 unit=step", 0.2, 5, 6,
         lambda o: S.MultiStepLR(o, milestones=[7, 12, 20], gamma=0.1), "step"),
        ("multistep:2,4 warmup=2 warmup_start=0.5", 0.1, 2, 8,
         seq(2, 0.5, lambda o: S.MultiStepLR(o, milestones=[2, 4], gamma=0.1)), "epoch"),
        ("onecycle", 0.05, 10, 10, lambda o: S.OneCycleLR(o, max_lr=0.05, total_steps=100),
         "step"),
        ("onecycle:0.1 pct_start=0.25 anneal=linear three_phase=true div_factor=10 "
         "final_div_factor=100", 0.01, 9, 7,
         lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=63, pct_start=0.25,
                                anneal_strategy="linear", three_phase=True, div_factor=10,
                                final_div_factor=100, cycle_momentum=False), "step"),
    ]


def sched_case(out, spec, base_lr, spe, epochs, build, unit):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr, momentum=0.9)
    sch = build(opt) if build else None
    lrs = []
    for step in range(spe * epochs):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        if sch is not None and (unit == "step" or (step + 1) % spe == 0):
            sch.step()
    out.write("sched %s\n" % spec)
    out.write("run %.17g %d %d\n" % (base_lr, spe, epochs))
    out.write("lrs %s\nend\n" % " ".join("%.17g" % x for x in lrs))


# --schedule plateau: spec, monitor (its mode), base lr, the metric of every epoch, and
# torch's ReduceLROnPlateau (threshold_mode rel, eps 1e-8; cooldown and min_lr as given)
def plateau_cases():
    flat = [1.0, 0.9, 0.9, 0.9, 0.9, 0.89995, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4]
    rising = [0.5, 0.55, 0.552, 0.556, 0.6, 0.6, 0.61, 0.7, 0.7, 0.7]
    return [
        ("plateau:0.5:2", "val_loss", 0.1, flat, dict(factor=0.5, patience=2)),
        ("plateau", "train_loss", 0.1, flat + [0.4] * 12, dict()),
        ("plateau:0.1:1 threshold=0.01", "val_acc", 0.01, rising,
         dict(mode="max", factor=0.1, patience=1, threshold=0.01)),
        ("plateau:0.1:0", "val_loss", 1e-6, [1.0] * 6, dict(factor=0.1, patience=0)),
        # cooldown: bad epochs right after a reduction are not counted
        ("plateau:0.5:1 cooldown=2", "val_loss", 0.1, flat + [0.4] * 10,
         dict(factor=0.5, patience=1, cooldown=2)),
        # min_lr: the rate stops at the floor (0.1 * 0.3^2 = 0.009 > 0.005 > 0.0027)
        ("plateau:0.3:0 min_lr=0.005", "val_loss", 0.1, [1.0] * 8,
         dict(factor=0.3, patience=0, min_lr=0.005)),
        # both, an accuracy, and a floor below eps of the last step
        ("plateau:0.5:0 cooldown=1 min_lr=0.02 threshold=0", "val_acc", 0.1, rising + [0.7] * 6,
         dict(mode="max", factor=0.5, patience=0, cooldown=1, min_lr=0.02, threshold=0)),
    ]


def plateau_case(out, spec, monitor, base_lr, metrics, kw):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr)
    sch = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
    lrs = []
    for m in metrics:
        lrs.append(opt.param_groups[0]["lr"])  # the lr of this epoch's steps
        opt.step()
        sch.step(m)
    out.write("plateau %s\nmonitor %s\nrun %.17g\n" % (spec, monitor, base_lr))
    out.write("metrics %s\n" % " ".join("%.17g" % x for x in metrics))
    out.write("lrs %s\nend\n" % " ".join("%.17g" % x for x in lrs))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(20261130)
    with open(os.path.join(outdir, "optim_fixtures.txt"), "w") as out:
        out.write("# generated by gen_optim_fixtures.py with torch %s\n" % torch.__version__)
        for name, kind, opts, no_decay in OPTIM_CASES:
            optim_case(out, name, kind, opts, no_decay, rng)
    import warnings
    warnings.filterwarnings("ignore")  # "scheduler.step() before optimizer.step()" etc.
    with open(os.path.join(outdir, "schedule_fixtures.txt"), "w") as out:
        out.write("# generated by gen_optim_fixtures.py with torch %s\n" % torch.__version__)
        for case in sched_cases():
            sched_case(out, *case)
    with open(os.path.join(outdir, "plateau_fixtures.txt"), "w") as out:
        out.write("# generated by gen_optim_fixtures.py with torch %s\n" % torch.__version__)
        for case in plateau_cases():
            plateau_case(out, *case)


if __name__ == "__main__":
    main()

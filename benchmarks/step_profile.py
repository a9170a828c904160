"""Where a training step's time goes: torch's profiler over a few steps.

Writes the operators that took the most time to a text file and returns the
GPU kernel time per step; set against the step time measured without the
profiler, that is the share of a step the GPU was busy. Far below 1, the
step is bound by the CPU side (Python, kernel launches, fairseq's own
bookkeeping), not by the model's arithmetic.
"""

import time

import torch


def kernel_seconds(events) -> float:
    """Total duration of the CUDA kernels, copies and memsets among the
    profiler's ``events``. The GPU timeline also holds the ranges of the
    CPU's record_function annotations (fairseq's "forward", "optimizer"...),
    which span kernels and the gaps between them: a device event named like
    a CPU event is such a range and is left out."""
    cuda = torch.autograd.DeviceType.CUDA
    cpu_names = {event.name for event in events if event.device_type != cuda}
    return sum(event.time_range.elapsed_us() for event in events
               if event.device_type == cuda and event.name not in cpu_names) / 1e6


def profile_steps(trainer, steps, path, cuda) -> dict:
    """Profile ``trainer.train_step`` over ``steps`` (each a list of samples:
    one update); write the top operators to ``path``; return the kernel
    seconds per step (None without CUDA)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as profiler:
        start = time.perf_counter()
        for step in steps:
            trainer.train_step(step)
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
    averages = profiler.key_averages()
    with open(path, "w") as f:
        f.write(f"{len(steps)} steps, {wall:.3f} s under the profiler\n")
        for key in (["self_device_time_total"] if cuda else []) + ["self_cpu_time_total"]:
            try:
                f.write(f"\nsorted by {key}\n{averages.table(sort_by=key, row_limit=20)}\n")
            except (AttributeError, KeyError) as error:  # older torch names the key otherwise
                f.write(f"\n(no table by {key}: {error})\n")
    kernel_s = kernel_seconds(profiler.events()) / len(steps) if cuda else None
    return dict(kernel_s_per_step=kernel_s)

"""Data larger than memory: training throughput streamed against in memory, and the decode cache's start-up.

Method
1) Data: an ImageFolder of ``N_TRAIN + N_TEST`` grayscale PNGs (28 px) written from the first Fashion-MNIST
   images (``/usr/share/datasets/fashion-mnist``, or ``$RECIPESEARCH_DATA``), one folder per class, in a
   temporary folder with its own ``$RECIPESEARCH_CACHE`` (removed at the end).
2) Training arms, same recipe (cnn width 32, batch 128, SGD + cosine, crop + flip, CPU, seed 0; 1 torch
   thread: the second core is the workers', and one thread is not stalled at every OpenMP barrier when
   another process takes a core, which made 2-thread runs swing 10x on the shared machine),
   differing only in ``data.in_memory`` / ``data.cache`` / ``data.workers``: in memory; streamed from the
   files (decoded per batch: 0, 1 and 2 DataLoader workers); streamed from the decode cache (memmap: 0 and
   1 worker). Arms interleaved in rotated order per repeat; images/s and the data-wait fraction are the
   Trainer's (training steps only; workers start at the first epoch, inside train_seconds). On a shared
   machine wall-clock images/s move with the load, so each run also counts the CPU seconds it used over
   the training steps: the training process's (``time.process_time``) plus its DataLoader workers'
   (``/proc/<pid>/stat`` of its child processes, Linux): images per CPU-second is the cost of each way of
   feeding the model and barely moves with other processes. Every arm trains on the same batches
   (tests/data/test_stream.py), so the accuracies must agree exactly.
3) Start-up (``load_data``, outside train_seconds): decoding the folder without the cache (the old path);
   a cold cache (decode pass writing it: 0 and 2 workers); a cache hit read into memory; a cache hit
   opened for streaming. Each after ``clear_cache()``; a cold arm gets an empty cache folder each time.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import environment, fmt_summary, interleave, load_now, md_table, summarize

NAME = "streaming"
TITLE = "Data larger than memory: images/s and data wait streamed vs in memory; decode-cache start-up"
N_TRAIN, N_TEST = 4000, 1000
THREADS = 1  # torch threads of the training process (module docstring)
# arm -> data fields; "cache": False streams from the files
ARMS: dict[str, dict[str, Any]] = {
    "in memory": {"in_memory": True},
    "stream files, 0 workers": {"in_memory": False, "cache": False, "workers": 0},
    "stream files, 1 worker": {"in_memory": False, "cache": False, "workers": 1},
    "stream files, 2 workers": {"in_memory": False, "cache": False, "workers": 2},
    "stream cache, 0 workers": {"in_memory": False, "workers": 0},
    "stream cache, 1 worker": {"in_memory": False, "workers": 1},
}
STARTUP = ("decode, no cache", "cold cache, 0 workers", "cold cache, 2 workers", "cache hit, in memory",
           "cache hit, streamed")


def write_folder(root: Path) -> None:
    """The first N_TRAIN / N_TEST Fashion-MNIST images as "L" PNGs under train/<class>/ and test/<class>/."""
    from PIL import Image

    from recipesearch.data import DataSpec, get_dataset

    raw = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist"))
    names = [n.replace("/", "-") for n in raw.class_names]
    for split, images, labels, n in (("train", raw.train_images, raw.train_labels, N_TRAIN),
                                     ("test", raw.test_images, raw.test_labels, N_TEST)):
        for cls in names:
            (root / split / cls).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            Image.fromarray(images[i, 0].numpy(), mode="L").save(root / split / names[int(labels[i])] / f"{i:05d}.png")


def _recipe(root: Path, fields: dict[str, Any], epochs: int):
    from recipesearch.recipe import recipe_from_dict

    return recipe_from_dict({
        "model": {"name": "cnn", "width": 32},
        "data": {"name": "imagefolder", "root": str(root), "image_size": 28, "channels": 1, **fields},
        "optimizer": {"name": "sgd", "lr": 0.2, "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4},
        "schedule": {"name": "cosine", "warmup_epochs": 0.5},
        "max_duration": epochs, "batch_size": 128, "seed": 0, "threads": THREADS, "device": "cpu",
    }, source=f"bench:{NAME}")


def _children_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each live child process of this one, from /proc (Linux; {} elsewhere)."""
    import os

    me, tick, out = os.getpid(), os.sysconf("SC_CLK_TCK"), {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:  # fields after "pid (comm)": state, ppid, ..., utime (12th), stime (13th)
            out[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def train_once(recipe) -> dict[str, Any]:
    """One timed training run (Trainer.train, then the test accuracy), with the CPU seconds it used."""
    import gc

    from recipesearch.train.loop import Trainer, evaluate

    gc.collect()  # the previous run's loader workers are shut down, not counted here
    trainer = Trainer(recipe)
    before = _children_cpu()
    cpu0 = time.process_time()
    seconds, data_seconds = trainer.train()
    main_cpu = time.process_time() - cpu0
    workers_cpu = sum(cpu - before.get(pid, 0.0) for pid, cpu in _children_cpu().items())
    state = trainer.state
    accuracy, _ = evaluate(state, trainer.data.test.images, trainer.data.test.labels)
    return {"images_per_s": state.samples_seen / seconds, "data_wait_fraction": data_seconds / seconds,
            "train_seconds": seconds, "main_cpu_seconds": main_cpu, "worker_cpu_seconds": workers_cpu,
            "images_per_cpu_s": state.samples_seen / (main_cpu + workers_cpu), "accuracy": accuracy,
            "steps": state.step}


def _startup(root: Path, cache_root: Path, arm: str) -> float:
    """Seconds of ``load_data`` for one start-up arm (fresh process state; a cold arm: an empty cache)."""
    import os

    from recipesearch.data import DataSpec, clear_cache, load_data

    fields: dict[str, Any] = {"name": "imagefolder", "root": str(root), "image_size": 28, "channels": 1, "workers": 0}
    if arm == "decode, no cache":
        fields["cache"] = False
    elif arm.startswith("cold"):
        cold = cache_root.parent / "cold"
        shutil.rmtree(cold, ignore_errors=True)
        os.environ["RECIPESEARCH_CACHE"] = str(cold)
        fields["workers"] = int(arm.split(", ")[1][0])
    elif arm == "cache hit, streamed":
        fields["in_memory"] = False
    clear_cache()
    start = time.perf_counter()
    try:
        bundle = load_data(DataSpec(**fields), "cpu")
        assert len(bundle.train) == N_TRAIN
        return time.perf_counter() - start
    finally:
        os.environ["RECIPESEARCH_CACHE"] = str(cache_root)
        clear_cache()


def run(quick: bool = False, repeats: int | None = None) -> dict[str, Any]:
    import os

    from recipesearch.data import clear_cache

    repeats = repeats or (2 if quick else 4)
    epochs = 2 if quick else 3
    env = environment()
    work = Path(tempfile.mkdtemp(prefix="recipesearch-streaming-"))
    saved_cache = os.environ.get("RECIPESEARCH_CACHE")
    cache_root = work / "cache"
    os.environ["RECIPESEARCH_CACHE"] = str(cache_root)
    try:
        t0 = time.perf_counter()
        write_folder(work / "images")
        print(f"[{NAME}] wrote {N_TRAIN + N_TEST} PNGs in {time.perf_counter() - t0:.1f} s", flush=True)
        startup: list[dict[str, Any]] = []
        for r, arm in interleave(STARTUP, repeats):
            seconds = _startup(work / "images", cache_root, arm)
            startup.append({"repeat": r, "arm": arm, "seconds": seconds, "load": load_now()})
            print(f"  start-up {arm:>24}: {seconds:6.2f} s", flush=True)
        train_once(_recipe(work / "images", ARMS["in memory"], 1))  # untimed warm-up (the cache is warm by now)
        runs: list[dict[str, Any]] = []
        for r, arm in interleave(list(ARMS), repeats):
            clear_cache()
            load = load_now()
            res = train_once(_recipe(work / "images", ARMS[arm], epochs))
            runs.append({"repeat": r, "arm": arm, "load": load, **res})
            print(f"  repeat {r} {arm:>24}: {res['images_per_s']:7.0f} img/s, {res['images_per_cpu_s']:6.0f} img/CPU-s "
                  f"(workers {res['worker_cpu_seconds']:.1f} s), wait {res['data_wait_fraction']:.3f}, "
                  f"acc {res['accuracy']:.4f}", flush=True)
    finally:
        if saved_cache is None:
            os.environ.pop("RECIPESEARCH_CACHE", None)
        else:
            os.environ["RECIPESEARCH_CACHE"] = saved_cache
        clear_cache()
        shutil.rmtree(work, ignore_errors=True)
    return {"name": NAME, "quick": quick, "repeats": repeats, "epochs_per_run": epochs,
            "images": {"train": N_TRAIN, "test": N_TEST, "size": 28, "channels": 1},
            "environment": env, "threads": THREADS,
            "load_during_runs": summarize(m["load"][0] for m in runs + startup if m.get("load")),
            "runs": runs, "startup": startup, "rows": _rows(runs), "startup_rows": _startup_rows(startup),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def _rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    base = summarize(m["images_per_s"] for m in runs if m["arm"] == "in memory")["median"]
    base_cpu = summarize(m.get("images_per_cpu_s") for m in runs if m["arm"] == "in memory")["median"]
    rows = []
    for arm in ARMS:
        mine = [m for m in runs if m["arm"] == arm]
        ips = summarize(m["images_per_s"] for m in mine)
        cpu = summarize(m.get("images_per_cpu_s") for m in mine)
        rows.append({"arm": arm, "images_per_s": ips, "relative": ips["median"] / base if base else None,
                     "images_per_cpu_s": cpu, "relative_cpu": cpu["median"] / base_cpu if cpu["n"] else None,
                     "worker_cpu_share": summarize(m["worker_cpu_seconds"] / (m["worker_cpu_seconds"]
                                                   + m["main_cpu_seconds"]) for m in mine if "worker_cpu_seconds" in m),
                     "data_wait_fraction": summarize(m["data_wait_fraction"] for m in mine),
                     "accuracies": sorted({round(m["accuracy"], 6) for m in mine})})
    return rows


def _startup_rows(startup: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"arm": arm, "seconds": summarize(m["seconds"] for m in startup if m["arm"] == arm)} for arm in STARTUP]


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def distinct_accuracies(rows: list[dict[str, Any]]) -> list[float]:
    """The test accuracies over every arm, each once: one value when every arm trained on the same batches."""
    return sorted({a for r in rows for a in r["accuracies"]})


def render(result: dict[str, Any]) -> str:
    rows = result["rows"]
    accuracies = distinct_accuracies(rows)
    same = len(accuracies) == 1
    load = result.get("load_during_runs")
    im = result["images"]
    parts = [
        "**What**: training images/s and the data-wait fraction (share of train_seconds spent producing the "
        "batch) with the images in memory against streamed by DataLoader workers (`data.in_memory: false`), "
        "from the image files (decoded per batch, `data.cache: false`) or from the decode cache (memmap); the "
        "images per CPU-second of the training process and its DataLoader workers together (the cost of each "
        "way, which barely moves with other load on the machine, unlike wall-clock images/s); and the "
        "start-up time of `load_data` with and without the decode cache (outside train_seconds).",
        f"**How**: an ImageFolder of {im['train'] + im['test']} grayscale {im['size']} px PNGs "
        f"({im['train']} train, {im['test']} test) written from Fashion-MNIST; cnn width 32, batch 128, "
        f"{result['epochs_per_run']} epochs per run, {result.get('threads', 2)} torch thread(s), CPU; arms interleaved in rotated order, "
        f"{result['repeats']} repeats{' (--quick)' if result['quick'] else ''}. Cells: median [min–max]. "
        "Same seed everywhere: every arm sees the same batches, so the accuracies must be equal: "
        + ("they are (" + ", ".join(f"{a:.4f}" for a in accuracies) + ")." if same else
           "**they differ**: " + ", ".join(f"{r['arm']} {r['accuracies']}" for r in rows) + ".")
        + (f" 1-minute load average during the runs: {fmt_summary(load, '.1f', 'range')} on 2 cores." if load else ""),
        "",
        md_table(["arm", "runs", "img/CPU-s (process + workers)", "relative (CPU)", "workers' CPU share",
                  "img/s (wall)", "relative (wall)", "data-wait fraction"],
                 [[r["arm"], r["images_per_s"]["n"], fmt_summary(r.get("images_per_cpu_s") or {}, ".0f", "range"),
                   _ratio(r.get("relative_cpu")), fmt_summary(r.get("worker_cpu_share") or {}, ".2f", "range"),
                   fmt_summary(r["images_per_s"], ".0f", "range"), _ratio(r["relative"]),
                   fmt_summary(r["data_wait_fraction"], ".3f", "range")] for r in rows]),
        "",
        "Start-up (`load_data` after `clear_cache()`: listing and fingerprinting the files, then decoding or "
        "reading):",
        "",
        md_table(["start-up", "seconds"],
                 [[r["arm"], fmt_summary(r["seconds"], ".2f", "range")] for r in result["startup_rows"]]),
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    from bench.common import REPORTS, save_result

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 repeats of 2-epoch runs instead of 4 of 3")
    args = p.parse_args(argv)
    result = run(quick=args.quick)
    save_result(NAME, result)
    print(render(result))
    print(f"saved {REPORTS / 'bench' / (NAME + '.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

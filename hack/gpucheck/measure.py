#!/usr/bin/env python3
"""The CUDA side of hack/gpucheck/h200.sh.

Run inside the environment the device plugin's Allocate answered (h200.sh's in_container):

  probe     create a CUDA context with PyTorch, read what HAMi-core charged for it from the
            shared region, then find the largest tensor that can be allocated by bisection
            (1 MiB steps), and try the size asked for with --want.
  hold      create a context (PyTorch or CuPy), optionally allocate --mib, write --ready and
            stay until --stop exists: a second process of the same container.
  grab      create a context with PyTorch, record the limit variables as the process started
            with them and as HAMi-core left them, and the limits HAMi-core holds it to (the
            shared region), then ask for one tensor of --mib.
  region    decode a HAMi-core shared-region file (v1.2 layout) as JSON (no CUDA needed).
  summarize read the JSON results of one h200.sh run and write the summary.
  limits    the same for one `h200.sh limits` run.
"""
import ctypes
import argparse
import glob
import json
import math
import os
import re
import struct
import sys
import time

MIB = 1 << 20

# HAMi-core shared region v1.2 (src/multiprocess/multiprocess_memory_limit.h), the offsets
# vgpu-device-plugin's monitor reads too.
REGION_SIZE = 2008953
DEVICES = 16
OFF_MAJOR, OFF_MINOR, OFF_DEVICE_NUM = 4, 8, 56
OFF_UUIDS, UUID_LEN = 64, 96
OFF_LIMIT, OFF_SM_LIMIT, OFF_PROCS = 1600, 1728, 1856
SLOT_SIZE, SLOTS = 1960, 1024
OFF_PROC_NUM = OFF_PROCS + SLOT_SIZE * SLOTS
SLOT_USED, USED_SIZE = 8, 64
SLOT_MONITORUSED, SLOT_STATUS = 1032, 1928


def decode_region(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return {"path": path, "error": str(e)}
    out = {"path": path, "bytes": len(data)}
    if len(data) < OFF_PROC_NUM + 4:
        out["error"] = "shorter than a v1.2 region"
        return out
    out["version"] = "%d.%d" % struct.unpack_from("<II", data, OFF_MAJOR)
    n = struct.unpack_from("<Q", data, OFF_DEVICE_NUM)[0]
    out["device_num"] = n
    out["uuids"] = [data[OFF_UUIDS + i * UUID_LEN:OFF_UUIDS + (i + 1) * UUID_LEN].split(b"\0")[0].decode()
                    for i in range(min(n, DEVICES))]
    out["limit"] = list(struct.unpack_from("<%dQ" % DEVICES, data, OFF_LIMIT)[:max(n, 1)])
    out["sm_limit"] = list(struct.unpack_from("<%dQ" % DEVICES, data, OFF_SM_LIMIT)[:max(n, 1)])
    out["proc_num"] = struct.unpack_from("<i", data, OFF_PROC_NUM)[0]
    procs = []
    for s in range(SLOTS):
        base = OFF_PROCS + s * SLOT_SIZE
        pid, hostpid = struct.unpack_from("<ii", data, base)
        ctx, module, dat, offset, total = struct.unpack_from("<5Q", data, base + SLOT_USED)
        if pid == 0 and hostpid == 0 and total == 0:
            continue
        procs.append({
            "slot": s, "pid": pid, "hostpid": hostpid,
            "context_size": ctx, "module_size": module, "data_size": dat, "total": total,
            "monitorused": struct.unpack_from("<Q", data, base + SLOT_MONITORUSED)[0],
            "status": struct.unpack_from("<i", data, base + SLOT_STATUS)[0],
        })
    out["procs"] = procs
    out["used_sum"] = sum(p["total"] for p in procs)
    return out


def region_path():
    return os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/cudevshr.cache")


# What HAMi-core reads of the environment for its limits and region.
LIMIT_VARS = ("CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_SM_LIMIT_0",
              "CUDA_DEVICE_MEMORY_SHARED_CACHE", "CUDA_REDIRECT")


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def cu_lookup(symbols=("cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemGetInfo_v2")):
    """Which library answers a lookup of each driver function in the driver's library, as
    cudart looks them up: ctypes asks dlsym, which HAMi-core overrides, and dladdr names the
    file the answer lies in (HAMi-core's hook, or the driver's own function)."""
    out = {}
    try:
        libc = ctypes.CDLL(None)
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return {"error": str(e)}
    for sym in symbols:
        try:
            addr = ctypes.cast(getattr(cuda, sym), ctypes.c_void_p).value
        except AttributeError as e:
            out[sym] = "not found: %s" % e
            continue
        info = DlInfo()
        if libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) and info.dli_fname:
            out[sym] = info.dli_fname.decode()
        else:
            out[sym] = "unknown (0x%x)" % addr
    return out


def c_environ():
    """The limit variables as the C library holds them now: HAMi-core's setenv changes these,
    not Python's os.environ, a copy taken when the interpreter started."""
    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    return {k: (lambda v: v.decode() if v is not None else None)(getenv(k.encode())) for k in LIMIT_VARS}


def own_slot(region):
    pid = os.getpid()
    for p in region.get("procs", []):
        if pid in (p["pid"], p["hostpid"]):
            return p
    return None


def limit_mib():
    value = os.environ.get("CUDA_DEVICE_MEMORY_LIMIT_0", "")
    m = re.fullmatch(r"(\d+)([mMgG]?)", value)
    if not m:
        return None
    n = int(m.group(1))
    return n * 1024 if m.group(2) in ("g", "G") else n


def note(msg):
    """A marker on stderr, in order with HAMi-core's own lines there."""
    sys.stderr.write("GPUCHECK %s\n" % msg)
    sys.stderr.flush()


def start_torch():
    import torch
    t0 = time.time()
    torch.zeros(1, device="cuda")  # the context is created, and charged, here
    torch.cuda.synchronize()
    info = {"framework": "torch " + torch.__version__, "cuda_runtime": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "init_seconds": round(time.time() - t0, 2),
            "total_memory_mib": torch.cuda.get_device_properties(0).total_memory / MIB}
    try:
        free, total = torch.cuda.mem_get_info()
        info["mem_get_info_mib"] = {"free": free / MIB, "total": total / MIB}
    except Exception as e:  # HAMi-core answers an error once usage exceeds the limit
        info["mem_get_info_error"] = first_line(e)
    return torch, info


def start_cupy():
    import cupy
    t0 = time.time()
    cupy.zeros(1)
    cupy.cuda.runtime.deviceSynchronize()
    info = {"framework": "cupy " + cupy.__version__, "init_seconds": round(time.time() - t0, 2)}
    try:
        free, total = cupy.cuda.runtime.memGetInfo()
        info["mem_get_info_mib"] = {"free": free / MIB, "total": total / MIB}
    except Exception as e:
        info["mem_get_info_error"] = first_line(e)
    return cupy, info


def first_line(e):
    return "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:400])


def try_alloc(torch, mib):
    note("attempt %d MiB" % mib)
    try:
        t = torch.empty(mib * MIB, dtype=torch.uint8, device="cuda")
        del t
        ok, err = True, None
    except Exception as e:  # OutOfMemoryError, or AcceleratorError for HAMi-core's -1
        ok, err = False, first_line(e)
    torch.cuda.empty_cache()
    note("attempt %d MiB %s" % (mib, "ok" if ok else "failed"))
    return ok, err


def cmd_probe(args):
    torch, info = start_torch()
    region = decode_region(region_path())
    res = {"label": args.label, "pid": os.getpid(), "limit_mib": limit_mib(), "init": info,
           "own_slot": own_slot(region), "region_at_start": {k: region.get(k) for k in ("version", "limit", "sm_limit", "used_sum")},
           "other_procs_at_start": [p for p in region.get("procs", []) if p is not own_slot(region)]}
    lo, hi = 0, (res["limit_mib"] or 4096) + 1
    ok, err = try_alloc(torch, hi)
    if ok:
        res["note"] = "%d MiB fits: the limit does not hold" % hi
        lo = hi
    else:
        res["error_above_limit"] = err
        while hi - lo > 1:
            mid = (lo + hi) // 2
            ok, err = try_alloc(torch, mid)
            if ok:
                lo = mid
            else:
                hi, res["error_at_first_failure"] = mid, err
    res["largest_mib"] = lo
    res["first_failing_mib"] = hi
    if args.want:
        ok, err = try_alloc(torch, args.want)
        res["want_mib"], res["want_fits"], res["want_error"] = args.want, ok, err
    res["own_slot_at_end"] = own_slot(decode_region(region_path()))
    emit(res, args.json)


def cmd_grab(args):
    at_start = {k: os.environ.get(k) for k in LIMIT_VARS}
    torch, info = start_torch()
    after = c_environ()
    region = decode_region(after["CUDA_DEVICE_MEMORY_SHARED_CACHE"] or "/tmp/cudevshr.cache")
    res = {"label": args.label, "pid": os.getpid(), "init": info, "env_at_start": at_start, "env_after_init": after,
           "region": {k: region.get(k) for k in ("path", "error", "limit", "sm_limit")},
           "own_slot": own_slot(region), "overrideEnv_present": os.path.exists("/overrideEnv"),
           "overrideEnv_writable": os.access("/overrideEnv", os.W_OK), "cu_lookup": cu_lookup()}
    res["ok"], res["error"] = try_alloc(torch, args.mib)
    res["mib"] = args.mib
    emit(res, args.json)


def cmd_hold(args):
    lib, info = (start_cupy() if args.framework == "cupy" else start_torch())
    keep = None
    if args.mib:
        keep = (lib.empty(args.mib * MIB, dtype=lib.uint8) if args.framework == "cupy"
                else lib.empty(args.mib * MIB, dtype=lib.uint8, device="cuda"))
    region = decode_region(region_path())
    res = {"label": args.label, "pid": os.getpid(), "limit_mib": limit_mib(), "init": info,
           "data_mib": args.mib, "own_slot": own_slot(region)}
    emit(res, args.ready)
    deadline = time.time() + args.seconds
    while not os.path.exists(args.stop) and time.time() < deadline:
        time.sleep(0.1)
    del keep


def emit(res, path):
    text = json.dumps(res, indent=1, sort_keys=True)
    print(text, flush=True)
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.rename(tmp, path)


def cmd_region(args):
    emit(decode_region(args.path), args.json)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def mib(b):
    return None if b is None else round(b / MIB, 2)


def oom_after(errfile, attempt):
    """HAMi-core's OOM line printed during the attempt at `attempt` MiB."""
    try:
        lines = open(errfile, errors="replace").read().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        if line.startswith("GPUCHECK attempt %d MiB" % attempt):
            inside = not line.endswith(("ok", "failed"))
            continue
        if inside and "OOM" in line:
            return line.strip()
    return None


def cmd_summarize(args):
    d = args.dir
    r = {name: load(os.path.join(d, name + ".json")) for name in
         ("single", "holder", "second", "cupy", "raised", "raised-holder", "raised-second", "baseline")}
    env = {}
    for name in ("alloc-2000", "alloc-raised"):
        a = load(os.path.join(d, name + ".json"))
        if a:
            env[name] = a
    out = {"versions": load(os.path.join(d, "versions.json")), "allocations": {}, "runs": {}}
    for name, a in env.items():
        out["allocations"][name] = {"pod": a["pod"], "assignment": a["assignment"], "envs": a["envs"],
                                    "mounts": ["%s -> %s%s" % (m.get("host_path", m.get("hostPath")), m.get("container_path", m.get("containerPath")),
                                                               " (ro)" if m.get("read_only", m.get("readOnly")) else "") for m in a["mounts"]],
                                    "annotations_after": {k: v for k, v in a["podAnnotationsAfter"].items() if k.startswith("volcano.sh/")}}
    for name, v in r.items():
        if not v:
            continue
        slot = v.get("own_slot") or {}
        row = {"pid": v.get("pid"), "limit_mib": v.get("limit_mib"), "framework": v.get("init", {}).get("framework"),
               "context_charged_mib": mib(slot.get("context_size")), "used_total_mib_at_start": mib(slot.get("total")),
               "mem_get_info_mib": v.get("init", {}).get("mem_get_info_mib"),
               "mem_get_info_error": v.get("init", {}).get("mem_get_info_error")}
        if "largest_mib" in v:
            row.update({"largest_tensor_mib": v["largest_mib"], "first_failing_mib": v["first_failing_mib"],
                        "error_at_first_failure": v.get("error_at_first_failure"),
                        "hami_oom_line": oom_after(os.path.join(d, name + ".err"), v["first_failing_mib"]),
                        "other_procs_context_mib": [mib(p["context_size"]) for p in v.get("other_procs_at_start", [])],
                        "want_mib": v.get("want_mib"), "want_fits": v.get("want_fits")})
        out["runs"][name] = row
    smi = {}
    for f in sorted(glob.glob(os.path.join(d, "smi-*.txt"))):
        smi[os.path.basename(f)] = open(f).read().strip()
    out["nvidia_smi_compute_apps"] = smi
    reserve = load(os.path.join(d, "reserve.json"))
    out["reserve"] = reserve
    text = json.dumps(out, indent=1, sort_keys=True)
    with open(args.json, "w") as f:
        f.write(text + "\n")
    lines = ["gpucheck summary (%s)" % time.strftime("%Y-%m-%d %H:%M:%S %Z"), ""]
    for k, v in (out["versions"] or {}).items():
        lines.append("%-22s %s" % (k, v))
    lines.append("")
    for name, a in out["allocations"].items():
        lines.append("%s: pod %s assignment %s" % (name, a["pod"], a["assignment"]))
        for k, v in sorted(a["envs"].items()):
            lines.append("    env %s=%s" % (k, v))
        for m in a["mounts"]:
            lines.append("    mount %s" % m)
        lines.append("    annotations after: %s" % a["annotations_after"])
    lines.append("")
    for name, row in out["runs"].items():
        lines.append("%-14s pid %-7s limit %-5s ctx charged %-8s MiB  used at start %-8s MiB  largest tensor %-6s MiB  want %s fits %s" % (
            name, row["pid"], row["limit_mib"], row["context_charged_mib"], row["used_total_mib_at_start"],
            row.get("largest_tensor_mib"), row.get("want_mib"), row.get("want_fits")))
        if row.get("hami_oom_line"):
            lines.append("%-14s   HAMi at %s MiB: %s" % ("", row["first_failing_mib"], row["hami_oom_line"]))
        if row.get("other_procs_context_mib"):
            lines.append("%-14s   other processes' context in the region: %s MiB" % ("", row["other_procs_context_mib"]))
        if row.get("mem_get_info_mib") or row.get("mem_get_info_error"):
            lines.append("%-14s   mem_get_info after init: %s" % ("", row.get("mem_get_info_mib") or row.get("mem_get_info_error")))
    for k, v in smi.items():
        lines.append("%s: %s" % (k, v.replace("\n", " | ")))
    if reserve:
        lines.append("")
        lines.append("reserve: %s" % json.dumps(reserve, sort_keys=True))
    with open(args.text, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def cmd_limits(args):
    d = args.dir
    out = {"versions": load(os.path.join(d, "versions.json")), "allocations": {}, "runs": {}}
    for f in sorted(glob.glob(os.path.join(d, "alloc-*.json"))):
        name = os.path.basename(f)[len("alloc-"):-len(".json")]
        a = load(f) or {}
        override = os.path.join(d, "alloc-%s.overrideEnv" % name)
        out["allocations"][name] = {
            "pod": a.get("pod"), "envs": a.get("envs"),
            "mounts": open(os.path.join(d, "alloc-%s.mounts" % name)).read().splitlines(),
            "overrideEnv": open(override).read().splitlines() if os.path.exists(override) else None}
    runs = []  # h200.sh's limits-runs.txt: NAME BUILD MOUNT(yes|no) RC [VAR=VALUE...]
    with open(os.path.join(d, "limits-runs.txt")) as f:
        for line in f:
            name, build, mount, rc, *exports = line.split()
            runs.append({"name": name, "build": build, "mount": mount == "yes", "rc": int(rc), "exports": exports})
    for run in runs:
        v = load(os.path.join(d, "limits-%s.json" % run["name"])) or {}
        region = v.get("region") or {}
        slot = v.get("own_slot") or {}
        out["runs"][run["name"]] = dict(run, **{
            "env_at_start": v.get("env_at_start"), "env_after_init": v.get("env_after_init"),
            "overrideEnv_present": v.get("overrideEnv_present"), "overrideEnv_writable": v.get("overrideEnv_writable"),
            "region_limit_mib": [mib(x) for x in region.get("limit") or []], "region_sm_limit": region.get("sm_limit"),
            "region_path": region.get("path"), "context_charged_mib": mib(slot.get("context_size")),
            "mem_get_info_mib": (v.get("init") or {}).get("mem_get_info_mib"), "cu_lookup": v.get("cu_lookup"),
            "asked_mib": v.get("mib"), "ok": v.get("ok"), "error": v.get("error"),
            "hami_oom_line": oom_after(os.path.join(d, "limits-%s.err" % run["name"]), v.get("mib") or 0)})
    text = json.dumps(out, indent=1, sort_keys=True)
    with open(args.json, "w") as f:
        f.write(text + "\n")
    lines = ["gpucheck limits (%s)" % time.strftime("%Y-%m-%d %H:%M:%S %Z"), ""]
    for k, v in (out["versions"] or {}).items():
        lines.append("%-22s %s" % (k, v))
    for name, a in out["allocations"].items():
        lines.append("")
        lines.append("allocation %s (pod %s)" % (name, a["pod"]))
        lines += ["    env %s=%s" % kv for kv in sorted((a["envs"] or {}).items())]
        lines += ["    mount %s" % m for m in a["mounts"]]
        lines += ["    overrideEnv %s" % l for l in a["overrideEnv"] or []]
    lines.append("")
    for name, r in out["runs"].items():
        lines.append("%s: HAMi-core %s, /overrideEnv mount %s, exports %s; exit %d" % (
            name, r["build"], "yes" if r["mount"] else "no", " ".join(r["exports"]) or "nothing", r["rc"]))
        lines.append("    /overrideEnv in the container: %s" % (
            ("read-only" if not r["overrideEnv_writable"] else "WRITABLE") if r["overrideEnv_present"] else "none"))
        lines.append("    env at start %s" % r["env_at_start"])
        lines.append("    env after CUDA init %s" % r["env_after_init"])
        lines.append("    region %s: limit %s MiB, sm_limit %s; context charged %s MiB; mem_get_info %s" % (
            r["region_path"], r["region_limit_mib"], r["region_sm_limit"], r["context_charged_mib"], r["mem_get_info_mib"]))
        if r.get("cu_lookup"):
            lines.append("    dlsym(libcuda.so.1, ...) answered from %s" % r["cu_lookup"])
        lines.append("    asked %s MiB: %s%s" % (r["asked_mib"], "allocated" if r["ok"] else "refused", "" if r["ok"] else ": %s" % r["error"]))
        if r["hami_oom_line"]:
            lines.append("    HAMi-core: %s" % r["hami_oom_line"])
    with open(args.text, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def cmd_reserve(args):
    """The reserve to add to a 2000 MiB limit: what the single process could not get, and at
    least the context HAMi-core charged, rounded up to the memory factor."""
    single = load(args.single) or {}
    ctx = mib((single.get("own_slot") or {}).get("context_size")) or 0
    deficit = args.want - single.get("largest_mib", args.want)
    raw = max(ctx, deficit)
    reserve = int(math.ceil(raw / args.factor)) * args.factor
    res = {"context_charged_mib": ctx, "deficit_mib": deficit, "factor_mib": args.factor, "reserve_mib": reserve,
           "raised_limit_mib": args.want + reserve}
    emit(res, args.json)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("probe")
    a.add_argument("--label", required=True)
    a.add_argument("--want", type=int, default=0)
    a.add_argument("--json")
    a.set_defaults(fn=cmd_probe)
    a = sub.add_parser("hold")
    a.add_argument("--label", required=True)
    a.add_argument("--framework", choices=("torch", "cupy"), default="torch")
    a.add_argument("--mib", type=int, default=0)
    a.add_argument("--ready", required=True)
    a.add_argument("--stop", required=True)
    a.add_argument("--seconds", type=float, default=120)
    a.set_defaults(fn=cmd_hold)
    a = sub.add_parser("grab")
    a.add_argument("--label", required=True)
    a.add_argument("--mib", type=int, required=True)
    a.add_argument("--json", required=True)
    a.set_defaults(fn=cmd_grab)
    a = sub.add_parser("limits")
    a.add_argument("--dir", required=True)
    a.add_argument("--json", required=True)
    a.add_argument("--text", required=True)
    a.set_defaults(fn=cmd_limits)
    a = sub.add_parser("region")
    a.add_argument("path")
    a.add_argument("--json")
    a.set_defaults(fn=cmd_region)
    a = sub.add_parser("reserve")
    a.add_argument("--single", required=True)
    a.add_argument("--want", type=int, default=2000)
    a.add_argument("--factor", type=int, default=5)
    a.add_argument("--json", required=True)
    a.set_defaults(fn=cmd_reserve)
    a = sub.add_parser("summarize")
    a.add_argument("--dir", required=True)
    a.add_argument("--json", required=True)
    a.add_argument("--text", required=True)
    a.set_defaults(fn=cmd_summarize)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()

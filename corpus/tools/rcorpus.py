"""rcorpus.py - shared helpers of the rfsck corpus tools (python3, stdlib only).

* guest plumbing: build the job tar, boot qemu with a timeout, read the output
  disk back (run_guest);
* manifest handling: convert the guest helper's TSV into JSON Lines, read and
  write manifests (see corpus/README.md, "Manifest format");
* a minimal ReiserFS v3 parser (superblock, tree walk) used by damage.py.

Environment knobs: RFSCK_CORPUS_CACHE (scratch dir, default corpus/build),
RFSCK_QEMU_ACCEL (default tcg), RFSCK_GUEST_TIMEOUT (seconds, default 600),
RFSCK_GUEST_MEM (MiB, default 512).
"""
import fcntl
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import tarfile
import tempfile
import threading
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.dirname(TOOLS)


def cache_dir():
    d = os.environ.get("RFSCK_CORPUS_CACHE") or os.path.join(CORPUS, "build")
    os.makedirs(d, exist_ok=True)
    return os.path.abspath(d)


# ----------------------------------------------------------------------------
# guest setup
# ----------------------------------------------------------------------------

def kernel_info():
    """Make sure kernel, initramfs and guest helper exist; return info dict.
    Serialised with a lock file so parallel builds never race on them."""
    c = cache_dir()
    with open(os.path.join(c, ".setup.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        return _kernel_info_locked(c)


def _kernel_info_locked(c):
    env = os.path.join(c, "kernel", "info.env")
    if not os.path.exists(env):
        subprocess.run(["sh", os.path.join(TOOLS, "fetch-kernel.sh"), c], check=True)
    info = {}
    with open(env) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                info[k] = v
    initrd = os.path.join(c, "initramfs.cpio.gz")
    srcs = [os.path.join(TOOLS, n) for n in ("guest-init.sh", "mkinitramfs.sh", "modorder.py")]
    if not os.path.exists(initrd) or any(os.path.getmtime(s) > os.path.getmtime(initrd) for s in srcs):
        subprocess.run(["sh", os.path.join(TOOLS, "mkinitramfs.sh"), c], check=True)
    gh = os.path.join(c, "guesthelper")
    src = os.path.join(TOOLS, "guesthelper.c")
    if not os.path.exists(gh) or os.path.getmtime(src) > os.path.getmtime(gh):
        subprocess.run(["gcc", "-static", "-O2", "-Wall", "-o", gh + ".tmp", src], check=True)
        os.replace(gh + ".tmp", gh)
    info["INITRD"] = initrd
    info["GUESTHELPER"] = gh
    with open(os.path.join(c, "modules.order")) as f:
        info["MODULES"] = f.read().split()
    return info


def recipe_headers(recipe_path):
    """Lines '# rfsck-KEY: VALUE' at the top of a recipe."""
    h = {}
    with open(recipe_path, errors="replace") as f:
        for line in f:
            if line.startswith("# rfsck-") and ":" in line:
                k, v = line[len("# rfsck-"):].split(":", 1)
                h[k.strip()] = v.strip()
    return h


def _add_bytes(tar, name, data, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    ti.mtime = 0
    tar.addfile(ti, io.BytesIO(data))


def _qemu_watched(cmd, timeout, idle_timeout):
    """Runs qemu; returns (console text, status or None).  It is killed after
    `timeout` seconds ("timeout"), or when `idle_timeout` is set and the guest
    has printed no "RFSCK: " line for that long ("idle": a mount or a read
    that does not come back; in mode multi the guest announces each image it
    starts and finishes)."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    chunks, state = [], {"mark": time.time()}

    def pump():
        for line in iter(p.stdout.readline, b""):
            chunks.append(line)
            if b"RFSCK: " in line:
                state["mark"] = time.time()
    t = threading.Thread(target=pump, daemon=True)
    t.start()
    t0, status = time.time(), None
    while p.poll() is None:
        now = time.time()
        if now - t0 > timeout:
            status = "timeout"
        elif idle_timeout and now - state["mark"] > idle_timeout:
            status = "idle"
        if status:
            p.kill()
            break
        time.sleep(0.5)
    p.wait()
    t.join(10)
    return b"".join(chunks).decode("utf-8", "replace"), status


def run_guest(image, recipe=None, mode="run", mountopts="rw", payload=(), timeout=None,
              log_path=None, expect_crash=False, extra_images=(), idle_timeout=None):
    """Boot the guest once on IMAGE.  Returns dict with keys: status
    ('ok', 'crashed', 'mount_failed', 'no_output', 'timeout', 'idle'), files
    (name -> bytes from /out), seconds, log (serial console text).  extra_images
    are attached after the output disk with the serials img1, img2, ... (mode
    "multi").  idle_timeout: see _qemu_watched."""
    info = kernel_info()
    timeout = timeout or int(os.environ.get("RFSCK_GUEST_TIMEOUT", "600"))
    work = tempfile.mkdtemp(prefix="rguest-", dir=cache_dir())
    try:
        job = os.path.join(work, "job.tar")
        with tarfile.open(job, "w", format=tarfile.USTAR_FORMAT) as tar:
            conf = "MODE=%s\nMOUNTOPTS='%s'\n" % (mode, mountopts)
            _add_bytes(tar, "job.conf", conf.encode())
            with open(info["GUESTHELPER"], "rb") as f:
                _add_bytes(tar, "guesthelper", f.read(), 0o755)
            if recipe:
                with open(recipe, "rb") as f:
                    _add_bytes(tar, "recipe.sh", f.read(), 0o755)
            for p in payload:
                tar.add(p, arcname=os.path.basename(p))
        # pad the job disk to a 1 MiB multiple
        sz = os.path.getsize(job)
        with open(job, "ab") as f:
            f.truncate((sz // (1 << 20) + 2) << 20)
        out = os.path.join(work, "out.img")
        with open(out, "wb") as f:
            f.truncate(512 << 20)  # sparse; manifests of big trees fit
        accel = os.environ.get("RFSCK_QEMU_ACCEL", "tcg")
        cmd = ["qemu-system-x86_64", "-nographic", "-no-reboot", "-monitor", "none",
               "-accel", accel, "-net", "none", "-m", os.environ.get("RFSCK_GUEST_MEM", "512"), "-smp", "1",
               "-rtc", "base=2025-06-01T00:00:00,clock=vm",
               "-kernel", info["VMLINUZ"], "-initrd", info["INITRD"],
               "-append", "console=ttyS0 panic=-1 loglevel=4 rdinit=/init",
               "-drive", "file=%s,format=raw,if=virtio,cache=writeback" % os.path.abspath(image),
               "-drive", "file=%s,format=raw,if=virtio,readonly=on" % job,
               "-drive", "file=%s,format=raw,if=virtio" % out]
        # extra disks in PCI slots 8 and up: probed after vda-vdc, which keep
        # their names; the guest finds each by its serial
        if len(extra_images) > 24:
            raise ValueError("at most 24 extra images per boot")
        for i, extra in enumerate(extra_images, 1):
            cmd += ["-drive", "file=%s,format=raw,if=none,cache=writeback,id=img%d"
                    % (os.path.abspath(extra), i),
                    "-device", "virtio-blk-pci,drive=img%d,serial=img%d,addr=0x%x" % (i, i, 7 + i)]
        t0 = time.time()
        status = None
        log, status = _qemu_watched(cmd, timeout, idle_timeout)
        secs = time.time() - t0
        if log_path:
            with open(log_path, "w") as f:
                f.write(" ".join(cmd) + "\n\n" + log)
        files = {}
        try:
            with tarfile.open(out, "r:") as t:
                for m in t.getmembers():
                    if m.isfile():
                        files[os.path.basename(m.name)] = t.extractfile(m).read()
        except (tarfile.TarError, OSError):
            pass
        if status is None:
            if "RFSCK: CRASHING" in log and "status" not in files:
                status = "crashed"
            elif "status" not in files:
                status = "no_output"
            elif files.get("mount.rc", b"1").strip() != b"0":
                status = "mount_failed"
            else:
                status = "ok"
        if expect_crash and status != "crashed":
            status = "expected_crash_but_" + status
        return {"status": status, "files": files, "seconds": round(secs, 1), "log": log}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_kernel(image, out, rw=False, timeout=None):
    tmp = tempfile.mkdtemp(prefix="rk-", dir=cache_dir())
    try:
        attempts = []
        for opts in (["rw"] if rw else ["ro", "rw"]):
            cp = os.path.join(tmp, "copy.img")
            shutil.copyfile(image, cp)
            r = run_guest(cp, None, mode="dump", mountopts=opts, timeout=timeout,
                                  log_path=out + ".console.%s.log" % opts)
            attempts.append({"mountopts": opts, "status": r["status"], "seconds": r["seconds"],
                             "mount_log": r["files"].get("mount.log", b"").decode("utf-8", "replace"),
                             "manifest_err": r["files"].get("manifest.err", b"").decode("utf-8", "replace")[-2000:],
                             "dmesg_tail": r["files"].get("dmesg.txt", b"").decode("utf-8", "replace")[-2500:]})
            if r["status"] == "ok":
                ents = tsv_to_entries(r["files"].get("manifest.tsv", b""))
                write_manifest(out, ents)
                break
            if r["status"] != "mount_failed":
                # a hang/timeout or a crash is not cured by mounting rw: stop here
                write_manifest(out, [])
                break
        else:
            write_manifest(out, [])
        with open(out + ".run.json", "w") as f:
            json.dump({"image": image, "attempts": attempts}, f, indent=1)
        return attempts[-1]["status"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)



# ----------------------------------------------------------------------------
# manifests
# ----------------------------------------------------------------------------

def path_text(raw):
    """Documented escaping rule: decode as UTF-8; every byte that is not part of
    a valid UTF-8 sequence becomes the 4 characters \\xHH (python's
    'backslashreplace').  Not reversible (a literal backslash is not escaped):
    path_hex is the key."""
    return raw.decode("utf-8", "backslashreplace")


def tsv_to_entries(tsv):
    entries = []
    for line in tsv.split(b"\n"):
        if not line.strip():
            continue
        f = line.decode("ascii").split("\t")
        (phex, typ, mode, uid, gid, size, mtime, nlink, ino, rdev, rmaj, rmin, sha, thex) = f
        raw = bytes.fromhex(phex)
        e = {"path": path_text(raw), "path_hex": phex, "type": typ, "size": int(size),
             "mode": int(mode), "uid": int(uid), "gid": int(gid), "mtime": int(mtime),
             "nlink": int(nlink), "ino": int(ino)}
        if typ == "file":
            e["sha256"] = sha
        if typ == "symlink":
            e["target_hex"] = thex
        if typ in ("chr", "blk"):
            e["rdev"] = int(rdev)
            e["rdev_major"] = int(rmaj)
            e["rdev_minor"] = int(rmin)
        entries.append(e)
    entries.sort(key=lambda e: bytes.fromhex(e["path_hex"]))
    return entries


def write_manifest(path, entries):
    with open(path + ".tmp", "w") as f:
        for e in sorted(entries, key=lambda e: bytes.fromhex(e["path_hex"])):
            f.write(json.dumps(e, sort_keys=False, ensure_ascii=True) + "\n")
    os.replace(path + ".tmp", path)


def read_manifest(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------
# minimal ReiserFS v3 parser (for damage.py); all little-endian
# ----------------------------------------------------------------------------

class Fs:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            f.seek(65536)
            sb = f.read(204)
        if len(sb) < 76:
            raise ValueError("image too short for a superblock")
        (self.block_count, self.free_blocks, self.root_block, self.j_first, self.j_dev,
         self.j_size, self.j_trans_max) = struct.unpack_from("<7I", sb, 0)
        self.blocksize, = struct.unpack_from("<H", sb, 44)
        self.magic = sb[52:62].rstrip(b"\0")
        if not self.magic.startswith(b"ReIsEr"):
            raise ValueError("no ReiserFS magic at 64 KiB")
        self.hash_code, = struct.unpack_from("<I", sb, 64)
        self.tree_height, self.bmap_nr, self.version = struct.unpack_from("<HHH", sb, 68)
        self.sb_block = 65536 // self.blocksize
        self.size = os.path.getsize(path)

    def read_block(self, n):
        with open(self.path, "rb") as f:
            f.seek(n * self.blocksize)
            return f.read(self.blocksize)

    def bitmap_blocks(self):
        n = (self.block_count - 1) // (8 * self.blocksize) + 1
        return [self.sb_block + 1] + [i * 8 * self.blocksize for i in range(1, n)]

    def journal_header_block(self):
        return self.j_first + self.j_size

    def walk(self):
        """Yield (block, level, parent_block) for every node reachable from the
        root (breadth first); unreadable / odd nodes are yielded with level None."""
        todo = [(self.root_block, None)]
        seen = set()
        while todo:
            b, parent = todo.pop(0)
            if b in seen or b == 0 or b >= self.block_count:
                continue
            seen.add(b)
            blk = self.read_block(b)
            if len(blk) < 24:
                yield b, None, parent
                continue
            level, nr = struct.unpack_from("<HH", blk, 0)
            yield b, level, parent
            if 2 <= level <= 6:
                for i in range(nr + 1):
                    off = 24 + 16 * nr + 8 * i
                    if off + 4 > len(blk):
                        break
                    child, = struct.unpack_from("<I", blk, off)
                    todo.append((child, b))

    def leaf_items(self, blk):
        """Parse item heads of a leaf block: list of dicts."""
        level, nr = struct.unpack_from("<HH", blk, 0)
        items = []
        for i in range(nr):
            o = 24 + 24 * i
            if o + 24 > len(blk):
                break
            dirid, oid, off_lo, off_hi = struct.unpack_from("<4I", blk, o)
            cnt, ilen, iloc, ver = struct.unpack_from("<4H", blk, o + 16)
            if (off_hi >> 28) in (1, 2, 3) and not (off_hi in (0xFFFFFFFF, 0xFFFFFFFE)):
                off64 = off_lo | (off_hi << 32)
                typ = {1: "indirect", 2: "direct", 3: "dir"}[off_hi >> 28]
                offset = off64 & ((1 << 60) - 1)
            else:
                offset = off_lo
                typ = {0: "sd", 500: "dir", 0xFFFFFFFF: "direct", 0xFFFFFFFE: "indirect"}.get(off_hi, "?")
                if off_lo == 0 and off_hi == 0:
                    typ = "sd"
            items.append({"dirid": dirid, "oid": oid, "offset": offset, "type": typ,
                          "len": ilen, "loc": iloc, "count": cnt})
        return items

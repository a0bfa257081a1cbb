"""Image folders as data sets: imgset_tool (rt_dataset_load) against Pillow.

The folders are generated here: several classes, PNG and JPEG, grey, RGB, palette and
RGBA, sizes that shrink, enlarge and change the aspect ratio. Every decoded image is
compared with Pillow's open -> convert -> resize(BILINEAR) -> centre crop; the runtime
implements Pillow's resampling in integers, so the bytes must agree to within 1/255
(they are expected to be equal). Then the layouts (split folders, CSV, zip, tar.gz),
the seeded validation split, the cache, and every bad file the loader must name.
"""
import io
import os
import resource
import struct
import subprocess
import tarfile
import zipfile
import zlib

import numpy as np
import pytest
from PIL import Image

TOOL = os.environ.get("IMGSET_TOOL")
pytestmark = pytest.mark.skipif(not TOOL, reason="IMGSET_TOOL not set (run through meson)")

SIZES = [(40, 30), (17, 50), (64, 64), (100, 80), (20, 20), (33, 71)]


def noise_image(rng, w, h, mode):
    """A smooth-ish picture (gradients + noise), so resampling has something to do."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)),
                     ((x + y) * 127 // max(w + h - 2, 1))], axis=-1)
    arr = np.clip(base + rng.integers(-40, 41, size=base.shape), 0, 255).astype(np.uint8)
    im = Image.fromarray(arr, "RGB")
    if mode == "L":
        return im.convert("L")
    if mode == "P":
        return im.convert("P", palette=Image.ADAPTIVE, colors=16)
    if mode == "RGBA":
        im = im.convert("RGBA")
        im.putalpha(Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8), "L"))
    return im


def make_folder(root, classes=("cat", "dog", "emu"), per_class=6, seed=0, big=False):
    """big: a JPEG per class of 2-8 times the tested sizes (RGB; grey for the last)."""
    rng = np.random.default_rng(seed)
    files = []
    for ci, c in enumerate(classes):
        d = root / c
        d.mkdir(parents=True, exist_ok=True)
        if big:
            mode = "L" if ci == len(classes) - 1 else "RGB"
            p = d / "zz_big.jpg"
            noise_image(rng, 130 + 35 * ci, 100 + 3 * ci, mode).save(p, "JPEG", quality=90)
            files.append((p, ci))
        for k in range(per_class):
            w, h = SIZES[(k + ci) % len(SIZES)]
            kind = (k + ci) % 6
            if kind == 0:
                p, im, fmt = d / ("%02d.png" % k), noise_image(rng, w, h, "RGB"), "PNG"
            elif kind == 1:
                p, im, fmt = d / ("%02d.png" % k), noise_image(rng, w, h, "L"), "PNG"
            elif kind == 2:
                p, im, fmt = d / ("%02d.png" % k), noise_image(rng, w, h, "P"), "PNG"
            elif kind == 3:
                p, im, fmt = d / ("%02d.png" % k), noise_image(rng, w, h, "RGBA"), "PNG"
            elif kind == 4:
                p, im, fmt = d / ("%02d.jpg" % k), noise_image(rng, w, h, "RGB"), "JPEG"
            else:
                p, im, fmt = d / ("%02d.JPEG" % k), noise_image(rng, w, h, "L"), "JPEG"
            im.save(p, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
            files.append((p, ci))
    (root / "notes.txt").write_text("not a class")             # ignored: not a folder
    (root / "cat" / "readme.md").write_text("ignored")          # ignored: extension
    (root / ".ipynb_checkpoints").mkdir(exist_ok=True)          # ignored: hidden
    files.sort(key=lambda t: (classes[t[1]], t[0].name))
    return files


def pillow_fit(path, h, w, channels, draft=True):
    """What the loader promises: a JPEG of twice H x W or more decoded at 1/2, 1/4 or 1/8
    scale (draft, in the file's own mode), convert, resize so H x W is covered, centre
    crop. draft=False: the full-size decode, to show the scaled one is used."""
    im = Image.open(path)
    if draft:
        im.draft(im.mode, (w, h))
    im = im.convert("L" if channels == 1 else "RGB")
    iw, ih = im.size
    if h * iw >= w * ih:
        rh, rw = h, max(w, h * iw // ih)
    else:
        rw, rh = w, max(h, w * ih // iw)
    if (rw, rh) != (iw, ih):
        im = im.resize((rw, rh), Image.BILINEAR)
    top, left = (rh - h) // 2, (rw - w) // 2
    a = np.asarray(im.crop((left, top, left + w, top + h)))
    if channels == 1:
        return a[None, :, :]
    return a.transpose(2, 0, 1)


def close(a, b):
    """Within 1/255: equal but for libjpeg builds rounding an IDCT differently."""
    return np.abs(a.astype(int) - b.astype(int)).max() <= 1


def run(path, *args, dump=None, env=None):
    cmd = [TOOL, str(path)] + [str(a) for a in args]
    if dump is not None:
        cmd += ["--dump", str(dump)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    info = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        info[k] = v
    info["rc"] = p.returncode
    return info


def read_dump(path, info):
    n = [int(x) for x in info["n"].split()]
    c, h, w = (int(x) for x in info["shape"].split())
    raw = np.fromfile(path, dtype=np.uint8)
    out, off = [], 0
    for k in range(3):
        px = raw[off:off + n[k] * c * h * w].reshape(n[k], c, h, w)
        off += n[k] * c * h * w
        out.append((px, raw[off:off + n[k]].copy()))
        off += n[k]
    assert off == raw.size
    return out


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("KILN_IMAGE_CACHE", str(d))
    return d


@pytest.mark.parametrize("size,channels", [("24", 3), ("24", 1), ("16x20", 3), ("48x32", 1)])
def test_folder_matches_pillow(tmp_path, cache, size, channels):
    files = make_folder(tmp_path / "pets", big=True)
    info = run(tmp_path / "pets", "--size", size, "--channels", channels,
               dump=tmp_path / "d.bin")
    assert info["rc"] == 0, info["msg"]
    assert info["layout"] == "folder"
    assert info["classes"] == "cat dog emu"
    h, w = (int(x) for x in (size + "x" + size).split("x")[:2]) if "x" not in size else \
        (int(x) for x in size.split("x"))
    assert info["shape"] == "%d %d %d" % (channels, h, w)
    (px, labels), (vpx, _), (tpx, _) = read_dump(tmp_path / "d.bin", info)
    assert len(px) == len(files) and len(vpx) == 0 and len(tpx) == 0
    worst, scaled = 0, []
    for i, (f, ci) in enumerate(files):
        want = pillow_fit(f, h, w, channels)
        assert labels[i] == ci, f
        diff = np.abs(px[i].astype(int) - want.astype(int)).max()
        worst = max(worst, diff)
        assert diff <= 1, "%s differs from Pillow by %d/255" % (f, diff)
        probe = Image.open(f)
        size0 = probe.size
        probe.draft(probe.mode, (w, h))
        if probe.size != size0:   # a JPEG at least twice the size: decoded scaled
            full = pillow_fit(f, h, w, channels, draft=False)
            scaled.append(np.abs(px[i].astype(int) - full.astype(int)).mean())
    print("JPEGs decoded scaled: %d, mean |difference| from a full-size decode: %s"
          % (len(scaled), " ".join("%.2f" % d for d in scaled)))
    assert len(scaled) == 3 and max(scaled) > 0.5, scaled   # the big ones, not equal
    # normalisation: mean/std of the training split in 0..1 units
    mean = [float(x) for x in info["mean"].split()]
    for c in range(channels):
        assert abs(mean[c] - px[:, c].mean() / 255.0) < 1e-4


def png_bytes(arr, color_type, filters=(0, 1, 2, 3, 4), idat_size=None):
    """A PNG of 8-bit arr (H, W[, C]) written here, not by Pillow: row y filtered with
    filters[y % len(filters)] (None, Sub, Up, Average, Paeth), the zlib stream cut into
    IDAT chunks of idat_size bytes (one chunk when None)."""
    a = arr.reshape(arr.shape[0], arr.shape[1], -1).astype(np.int32)
    h, w, bpp = a.shape
    rows = a.reshape(h, w * bpp)
    raw = bytearray()
    for y in range(h):
        f = filters[y % len(filters)]
        cur, prev = rows[y], rows[y - 1] if y else np.zeros(w * bpp, np.int32)
        left = np.concatenate([np.zeros(bpp, np.int32), cur[:-bpp]])
        upleft = np.concatenate([np.zeros(bpp, np.int32), prev[:-bpp]])
        if f == 0:
            pred = np.zeros_like(cur)
        elif f == 1:
            pred = left
        elif f == 2:
            pred = prev
        elif f == 3:
            pred = (left + prev) // 2
        else:
            p = left + prev - upleft
            pa, pb, pc = np.abs(p - left), np.abs(p - prev), np.abs(p - upleft)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
        raw += bytes([f]) + ((cur - pred) & 255).astype(np.uint8).tobytes()
    z = zlib.compress(bytes(raw))
    step = idat_size or len(z)
    idats = b"".join(png_chunk(b"IDAT", z[i:i + step]) for i in range(0, len(z), step))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"tEXt", b"k\0v")
            + idats + png_chunk(b"IEND", b""))


def test_png_kinds_match_pillow(tmp_path, cache):
    """Every 8-bit PNG kind, each row filter, the image data in one IDAT or split over
    many, and files Pillow wrote (its own filters): the same pixels as Pillow's decode.
    (Common PNGs are inflated with libdeflate, the rest by libpng; both must agree with
    Pillow bit for bit before the resize.)"""
    rng = np.random.default_rng(11)
    root = tmp_path / "pngs"
    files = []
    kinds = [("grey", 0, 1), ("greyalpha", 4, 2), ("rgb", 2, 3), ("rgba", 6, 4)]
    for ci, (name, ct, bpp) in enumerate(kinds):
        d = root / name
        d.mkdir(parents=True)
        for k, (w, h) in enumerate([(23, 17), (40, 33), (9, 50)]):
            y, x = np.mgrid[0:h, 0:w]
            base = (x * 7 + y * 3)[:, :, None] + 60 * np.arange(bpp)
            arr = ((base + rng.integers(0, 9, (h, w, bpp))) % 256).astype(np.uint8)
            split = (None, 7, 64)[k]
            p = d / ("%d.png" % k)
            p.write_bytes(png_bytes(arr, ct, idat_size=split))
            files.append((p, ci))
        p = d / "pillow.png"
        mode = ("L", "LA", "RGB", "RGBA")[ci]
        Image.fromarray(rng.integers(0, 256, (30, 30, bpp), dtype=np.uint8).squeeze(), mode).save(p)
        files.append((p, ci))
    files.sort(key=lambda t: (kinds[t[1]][0], t[0].name))
    for channels in (1, 3):
        info = run(root, "--size", 12, "--channels", channels, dump=tmp_path / "d")
        assert info["rc"] == 0, info["msg"]
        (px, labels), _, _ = read_dump(tmp_path / "d", info)
        for i, (f, ci) in enumerate(files):
            assert labels[i] == ci
            assert np.array_equal(px[i], pillow_fit(f, 12, 12, channels)), f


def test_auto_channels_and_default_size(tmp_path, cache):
    root = tmp_path / "grey"
    rng = np.random.default_rng(3)
    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for k in range(3):
            noise_image(rng, 30 + k, 40, "L").save(root / c / ("%d.png" % k))
    info = run(root)
    assert info["rc"] == 0, info["msg"]
    assert info["shape"] == "1 64 64"          # the first image's channels, 64 x 64


def test_val_split_is_seeded(tmp_path, cache):
    make_folder(tmp_path / "pets", per_class=8)
    a = run(tmp_path / "pets", "--size", 12, "--val", "0.25", "--seed", 7, dump=tmp_path / "a")
    b = run(tmp_path / "pets", "--size", 12, "--val", "0.25", "--seed", 7, dump=tmp_path / "b")
    c = run(tmp_path / "pets", "--size", 12, "--val", "0.25", "--seed", 8, dump=tmp_path / "c")
    full = run(tmp_path / "pets", "--size", 12, dump=tmp_path / "f")
    for i in (a, b, c, full):
        assert i["rc"] == 0, i["msg"]
    assert a["n"] == "18 6 0"
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert (tmp_path / "a").read_bytes() != (tmp_path / "c").read_bytes()
    (tp, tl), (vp, vl), _ = read_dump(tmp_path / "a", a)
    (fp, fl), _, _ = read_dump(tmp_path / "f", full)
    # train + val is the whole folder, each image once
    key = lambda p, l: [bytes(x) + bytes([y]) for x, y in zip(p, l)]
    assert sorted(key(tp, tl) + key(vp, vl)) == sorted(key(fp, fl))
    assert run(tmp_path / "pets", "--size", 12, "--val", 5)["n"] == "19 5 0"
    bad = run(tmp_path / "pets", "--size", 12, "--val", 24)
    assert bad["rc"] == 1 and "--val" in bad["msg"]


def test_cache_reuse(tmp_path, cache):
    files = make_folder(tmp_path / "pets")
    first = run(tmp_path / "pets", "--size", 20, dump=tmp_path / "1")
    second = run(tmp_path / "pets", "--size", 20, dump=tmp_path / "2")
    assert first["rc"] == 0 and second["rc"] == 0
    assert int(first["decoded"]) == len(files)
    assert second["decoded"] == "0"                      # the second load decodes nothing
    assert (tmp_path / "1").read_bytes() == (tmp_path / "2").read_bytes()
    assert len(list(cache.glob("*.kimg"))) == 1
    other = run(tmp_path / "pets", "--size", 21)         # other options: another entry
    assert int(other["decoded"]) == len(files)
    # a changed file changes the key: decoded again, and the new pixels are used
    f = files[0][0]
    Image.new("RGB", (30, 30), (255, 0, 0)).save(f)
    os.utime(f, ns=(1, 1))
    third = run(tmp_path / "pets", "--size", 20, dump=tmp_path / "3")
    assert int(third["decoded"]) == len(files)
    (px, _), _, _ = read_dump(tmp_path / "3", third)
    assert close(px[0], pillow_fit(f, 20, 20, 3))
    # a damaged cache file is ignored and rewritten, never trusted
    for k in cache.glob("*.kimg"):
        k.write_bytes(k.read_bytes()[:100])
    fourth = run(tmp_path / "pets", "--size", 20, dump=tmp_path / "4")
    assert fourth["rc"] == 0 and int(fourth["decoded"]) == len(files)
    assert (tmp_path / "4").read_bytes() == (tmp_path / "3").read_bytes()


def test_set_is_not_copied_into_memory(tmp_path, cache):
    """A decoded set of 101 MB (403 MB as floats) adds almost no anonymous memory
    (RssAnon) when it is decoded, when it is loaded from the cache, and after every
    training image was read as normalised floats: the pixels live in the mapped cache
    file, which the kernel pages in and out, so a set larger than RAM still trains.
    Copying the set (bytes or floats) anywhere would add 100 to 500 MB. (Under ASan
    the quarantine of freed decode buffers is kept small; its shadow of the mapping,
    1/8 of it, stays under the limit.)"""
    root = tmp_path / "big"
    rng = np.random.default_rng(5)
    for c in ("a", "b"):
        (root / c).mkdir(parents=True)
        for k in range(64):
            noise_image(rng, 6, 5, "RGB").save(root / c / ("%03d.png" % k))
    limit_kb = 64 * 1024
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1"
    for load in ("cold", "cached"):
        info = run(root, "--size", 512, "--channels", 3, "--rss", env=env)
        assert info["rc"] == 0, info["msg"]
        assert info["n"] == "128 0 0" and info["shape"] == "3 512 512"
        assert int(info["decoded"]) == (128 if load == "cold" else 0)
        assert int(info["rss_anon_load_kb"]) < limit_kb, (load, info)
        assert int(info["rss_anon_pass_kb"]) < limit_kb, (load, info)
        assert abs(float(info["pass_mean"])) < 1e-3    # every pixel read, normalised
    (kimg,) = cache.glob("*.kimg")
    assert kimg.stat().st_size > 128 * 3 * 512 * 512


def test_split_folders(tmp_path, cache):
    root = tmp_path / "splits"
    make_folder(root / "train", per_class=4, seed=1)
    make_folder(root / "val", per_class=2, seed=2)
    make_folder(root / "test", per_class=3, seed=3)
    info = run(root, "--size", 16, dump=tmp_path / "d")
    assert info["rc"] == 0, info["msg"]
    assert info["layout"] == "split folders"
    assert info["n"] == "12 6 9"
    (_, tl), (vp, vl), (tp, sl) = read_dump(tmp_path / "d", info)
    files = sorted((root / "test").glob("*/*.*"))
    files = [f for f in files if f.suffix.lower() in (".png", ".jpg", ".jpeg")]
    for i, f in enumerate(sorted(files, key=lambda p: (p.parent.name, p.name))):
        assert close(tp[i], pillow_fit(f, 16, 16, 3)), f
        assert sl[i] == "cat dog emu".split().index(f.parent.name)
    again = run(root, "--size", 16, "--val", 2)
    assert again["rc"] == 1 and "own validation folder" in again["msg"]
    (root / "test" / "yak").mkdir()
    noise_image(np.random.default_rng(0), 10, 10, "RGB").save(root / "test" / "yak" / "1.png")
    unknown = run(root, "--size", 16)
    assert unknown["rc"] == 1 and "yak" in unknown["msg"] and "not among" in unknown["msg"]


def test_csv(tmp_path, cache):
    files = make_folder(tmp_path / "pets")
    csv = tmp_path / "labels.csv"
    # labels independent of folders: by file name parity; a header line; relative paths
    lines = ["path,label"] + ["%s,%s" % (os.path.relpath(f, tmp_path),
                                         "odd" if i % 2 else "even")
                              for i, (f, _) in enumerate(files)]
    csv.write_text("\n".join(lines) + "\n")
    info = run(csv, "--size", 16, dump=tmp_path / "d")
    assert info["rc"] == 0, info["msg"]
    assert info["layout"] == "csv" and info["classes"] == "even odd"
    (px, lb), _, _ = read_dump(tmp_path / "d", info)
    for i, (f, _) in enumerate(files):
        assert lb[i] == i % 2
        assert close(px[i], pillow_fit(f, 16, 16, 3)), f
    csv.write_text("path,label\nnope/missing.png,a\n")
    missing = run(csv)
    assert missing["rc"] == 1 and "missing.png" in missing["msg"] and "line 2" in missing["msg"]
    csv.write_text("just-a-path.png\n")
    assert "expected path,label" in run(csv)["msg"]


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_archives_equal_the_folder(tmp_path, cache, kind):
    make_folder(tmp_path / "pets")
    folder = run(tmp_path / "pets", "--size", 16, dump=tmp_path / "f")
    arc = tmp_path / ("pets." + kind)
    if kind == "zip":
        with zipfile.ZipFile(arc, "w") as z:
            for p in sorted((tmp_path / "pets").rglob("*")):
                z.write(p, os.path.relpath(p, tmp_path))       # under a top folder pets/
    else:
        with tarfile.open(arc, "w:gz") as t:
            t.add(tmp_path / "pets", "pets")
    info = run(arc, "--size", 16, dump=tmp_path / "a")
    assert info["rc"] == 0, info["msg"]
    assert info["classes"] == folder["classes"] and info["n"] == folder["n"]
    assert (tmp_path / "a").read_bytes() == (tmp_path / "f").read_bytes()


# ---- bad files: each is named, or skipped and counted with --skip-bad ----

def png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(
        ">I", zlib.crc32(tag + data) & 0xffffffff)


def bomb_png():
    """A valid-looking PNG whose header claims 100000 x 100000 RGB pixels."""
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 1000)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat)
            + png_chunk(b"IEND", b""))


def jpeg_bytes(im, **kw):
    b = io.BytesIO()
    im.save(b, "JPEG", **kw)
    return b.getvalue()


def progressive_huge():
    """A progressive JPEG whose frame claims 8000 x 8000 (64 Mpx, under the pixel limit):
    its coefficients alone would take 192 MiB while decoding (about 500 MiB at the pixel
    limit, per decoding thread)."""
    data = bytearray(jpeg_bytes(Image.new("RGB", (16, 16), (10, 200, 30)), progressive=True))
    at = data.index(b"\xff\xc2")
    data[at + 5:at + 9] = struct.pack(">HH", 8000, 8000)
    return bytes(data)


def bad_cases():
    rng = np.random.default_rng(5)
    good = jpeg_bytes(noise_image(rng, 64, 48, "RGB"), quality=95)
    png16 = io.BytesIO()
    Image.fromarray((np.arange(400, dtype=np.uint16) * 150).reshape(20, 20)).save(png16, "PNG")
    return {
        "truncated.jpg": (good[:len(good) // 2], "truncated"),
        "empty.png": (b"", "empty file"),
        "text.png": (b"hello, I am not a picture\n", "not a PNG or JPEG"),
        "cmyk.jpg": (jpeg_bytes(Image.new("CMYK", (16, 16), (0, 128, 255, 0))), "CMYK"),
        "deep.png": (png16.getvalue(), "16-bit"),
        "bomb.png": (bomb_png(), "decompression bomb"),
        "progressive.jpg": (progressive_huge(), "a progressive JPEG of 8000 x 8000 pixels"),
        "badcrc.png": (bomb_png()[:20] + b"\0" * 40, "not a valid PNG"),
    }


@pytest.mark.parametrize("name", sorted(bad_cases()))
def test_bad_file_is_named(tmp_path, cache, name):
    data, phrase = bad_cases()[name]
    files = make_folder(tmp_path / "pets", per_class=3)
    bad = tmp_path / "pets" / "dog" / name
    bad.write_bytes(data)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    info = run(tmp_path / "pets", "--size", 16)
    assert info["rc"] == 1
    assert str(bad) in info["msg"], info["msg"]
    assert phrase in info["msg"], info["msg"]
    assert "--skip-bad" in info["msg"]
    if name in ("bomb.png", "progressive.jpg"):   # refused from the header: nothing decoded
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss <= max(before, 300_000)
    skip = run(tmp_path / "pets", "--size", 16, "--skip-bad", dump=tmp_path / "d")
    assert skip["rc"] == 0, skip["msg"]
    assert skip["skipped"] == "1" and str(bad) in skip["first_bad"]
    assert skip["n"].split()[0] == str(len(files))
    again = run(tmp_path / "pets", "--size", 16, "--skip-bad")   # from the cache
    assert again["decoded"] == "0" and again["skipped"] == "1"


def damaged_pngs():
    """PNGs damaged so that libpng refuses them: the fast reader must not accept any."""
    arr = (np.arange(16 * 12 * 3) % 251).astype(np.uint8).reshape(12, 16, 3)
    good = png_bytes(arr, 2)
    at = good.index(b"IEND") - 5                           # the IDAT's CRC, data intact
    flipped = good[:at] + bytes([good[at] ^ 1]) + good[at + 1:]
    z = zlib.compress(bytes(1 + 48) * 12)                  # the zlib stream cut short
    short = (good[:good.index(b"IDAT") - 4] + png_chunk(b"IDAT", z[:-6])
             + png_chunk(b"IEND", b""))
    raw = bytearray(zlib.decompress(zlib.compress(b"".join(
        bytes([0]) + arr[y].tobytes() for y in range(12)))))
    raw[49 * 5] = 7                                        # row 5: filter type 7
    badfilter = (good[:good.index(b"IDAT") - 4] + png_chunk(b"IDAT", zlib.compress(bytes(raw)))
                 + png_chunk(b"IEND", b""))
    return {"idat_crc.png": flipped, "short_idat.png": short, "filter7.png": badfilter}


@pytest.mark.parametrize("name", sorted(damaged_pngs()))
def test_damaged_png_is_named(tmp_path, cache, name):
    make_folder(tmp_path / "pets", per_class=2)
    bad = tmp_path / "pets" / "cat" / name
    bad.write_bytes(damaged_pngs()[name])
    info = run(tmp_path / "pets", "--size", 8)
    assert info["rc"] == 1, "%s was accepted" % name
    assert str(bad) in info["msg"] and "not a valid PNG" in info["msg"], info["msg"]


def test_folder_errors(tmp_path, cache):
    make_folder(tmp_path / "pets", per_class=2)
    (tmp_path / "pets" / "yak").mkdir()
    info = run(tmp_path / "pets")
    assert info["rc"] == 1 and "yak" in info["msg"] and "empty class folder" in info["msg"]
    one = tmp_path / "one"
    (one / "cat").mkdir(parents=True)
    noise_image(np.random.default_rng(1), 8, 8, "RGB").save(one / "cat" / "a.png")
    info = run(one)
    assert info["rc"] == 1 and "only one class" in info["msg"]
    (tmp_path / "nothing").mkdir()
    info = run(tmp_path / "nothing")
    assert info["rc"] == 1 and "no data set here: expected class folders" in info["msg"]
    assert run(tmp_path / "pets", "--channels", 2)["rc"] == 1


def test_turbojpeg_missing(tmp_path, cache, monkeypatch):
    """Without libturbojpeg a JPEG folder fails naming the library and its package."""
    make_folder(tmp_path / "pets", per_class=6)
    monkeypatch.setenv("KILN_LIBTURBOJPEG", "/nonexistent/libturbojpeg.so.0")
    info = run(tmp_path / "pets")
    assert info["rc"] == 1
    assert "libturbojpeg" in info["msg"] and "apt install libturbojpeg0" in info["msg"]


def test_paths_outside_the_data_set_are_refused(tmp_path, cache):
    """A CSV line with ../ or an absolute path, and a symbolic link in the folder, that
    lead outside the data set's folder are refused (they were decoded), unless
    KILN_DATASET_ALLOW_OUTSIDE=1; links that stay inside are fine. A file that is not an
    image is named without echoing its bytes."""
    files = make_folder(tmp_path / "set" / "pets", per_class=2)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    noise_image(np.random.default_rng(3), 8, 8, "RGB").save(outside / "x.png")
    allow = dict(os.environ, KILN_DATASET_ALLOW_OUTSIDE="1")
    csv = tmp_path / "set" / "labels.csv"
    rows = ["%s,%s" % (os.path.relpath(f, csv.parent), "a" if i % 2 else "b")
            for i, (f, _) in enumerate(files)]
    for bad in ("../elsewhere/x.png", str(outside / "x.png")):
        csv.write_text("path,label\n" + "\n".join(rows + [bad + ",a"]) + "\n")
        info = run(csv)
        assert info["rc"] == 1, info
        assert "outside the data set's folder" in info["msg"], info["msg"]
        assert "KILN_DATASET_ALLOW_OUTSIDE=1" in info["msg"] and "line %d" % (len(rows) + 2) in info["msg"]
        assert run(csv, env=allow)["rc"] == 0
    pets = tmp_path / "set" / "pets"
    (pets / "dog" / "alias.png").symlink_to(files[0][0])          # inside: fine
    assert run(pets)["rc"] == 0
    (pets / "cat" / "link.png").symlink_to(outside / "x.png")     # outside: refused
    info = run(pets)
    assert info["rc"] == 1 and "outside the data set's folder" in info["msg"], info["msg"]
    assert str(pets / "cat" / "link.png") in info["msg"]
    assert run(pets, env=allow)["rc"] == 0
    (pets / "cat" / "link.png").unlink()
    (pets / "emu2").symlink_to(outside, target_is_directory=True)  # a class folder
    info = run(pets)
    assert info["rc"] == 1 and "outside the data set's folder" in info["msg"], info["msg"]
    (pets / "emu2").unlink()
    (pets / "cat" / "passwd.png").write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    info = run(pets)
    assert info["rc"] == 1 and "not a PNG or JPEG" in info["msg"], info["msg"]
    assert "72 6f 6f 74" not in info["msg"] and "root:" not in info["msg"], info["msg"]

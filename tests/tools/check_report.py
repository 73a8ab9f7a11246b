#!/usr/bin/python3
"""Checks a `parallaxc report` page against the run it was made from.

Usage: check_report.py REPORT.html RUN_DIR [--screenshot PNG] [--all-charts]

  - the page is self-contained: no script, no reference to anything outside
    it (only the SVG namespace URI);
  - every chart's data-points equals the number of values the run's files
    hold for it, counted here independently (parallax.read_run, NumPy);
  - with --all-charts, every chart has data;
  - with --screenshot, the PNG headless Chromium took of the page is not
    blank: it holds the charts' colours over a good part of its area.
"""
import argparse
import math
import re
import struct
import sys
import zlib

import numpy as np

import parallax

failures = []


def check(label, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", label, "" if ok or not detail else ": " + detail))
    if not ok:
        failures.append(label)


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def column_count(rows, name, positive=False):
    return sum(1 for r in rows if finite(r.get(name)) and (not positive or r[name] > 0))


def expected_counts(run):
    """chart name -> the number of values the run's files hold for it."""
    losses, ev, progress = run["losses"], run["eval"], run["progress"]
    out = {"loss": column_count(losses, "loss") + column_count(progress, "loss_smoothed") +
           column_count(ev, "loss")}
    metrics = [c for c in (losses[0] if losses else {}) if c not in ("step", "loss", "lr")]
    eval_metrics = [c for c in (ev[0] if ev else {}) if c not in ("step", "loss", "lr")]
    if metrics or eval_metrics:
        out["metrics"] = (sum(column_count(losses, c) for c in metrics) +
                          sum(column_count(ev, c) for c in eval_metrics))
    lr = column_count(losses, "lr") if losses and "lr" in losses[0] else 0
    out["lr"] = lr or column_count(progress, "lr")
    out["throughput"] = column_count(progress, "samples_per_second", positive=True)
    ranks = (run["stats"] or {}).get("ranks", [])
    out["bytes"] = sum(1 for r in ranks for d in ("bytes_sent_per_step", "bytes_received_per_step")
                       for v in r.get(d, {}).values() if finite(v))
    out["comm"] = 2 * sum(1 for r in ranks if finite(r.get("comm_hidden_fraction")))
    out["memory"] = sum(finite((r.get("predicted_memory_bytes") or {}).get("total")) +
                        finite(r.get("peak_rss_bytes")) for r in ranks)
    # Timeline: the 7 span names with the most time over all ranks and
    # threads, the rest as "other": one value per (rank, thread, segment).
    trace = run["trace"] or []
    totals = {}
    for rank in trace:
        for spans in rank["threads"].values():
            for name, s in spans.items():
                totals[name] = totals.get(name, 0) + s["total_ms"]
    top = set(sorted(totals, key=lambda n: -totals[n])[:7])
    out["timeline"] = sum(len({(n if n in top else "other") for n, s in spans.items()
                               if s["total_ms"] > 0})
                          for rank in trace for spans in rank["threads"].values())
    return out


def png_pixels(path):
    """The pixels of an 8-bit RGB or RGBA PNG as an (height, width, 3) array."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, color))
    bpp = 3 if color == 2 else 4
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 1:  # Sub: a running sum along each channel
            line = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) & 255
        elif kind == 2:  # Up
            line = (line + prev) & 255
        elif kind in (3, 4):  # Average, Paeth: byte by byte
            cur = line.tolist()
            up = prev.tolist()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b, c = up[i], up[i - bpp] if i >= bpp else 0
                if kind == 3:
                    cur[i] = (cur[i] + (a + b) // 2) & 255
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            line = np.array(cur, np.int32)
        out[y] = line
        prev = line
    return out.reshape(height, width, bpp)[:, :, :3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("html")
    ap.add_argument("run_dir")
    ap.add_argument("--screenshot")
    ap.add_argument("--all-charts", action="store_true")
    a = ap.parse_args()
    html = open(a.html, encoding="utf-8").read()

    check("no script", "<script" not in html.lower())
    refs = re.findall(r'(?:src|href|url)\s*[=(]\s*["\']?([^"\' )>]+)', html, re.I)
    check("no reference outside the page", not refs, str(refs[:5]))
    uris = set(re.findall(r"https?://[^\"' <]+", html))
    check("no URL but the SVG namespace", uris <= {"http://www.w3.org/2000/svg"}, str(uris))

    charts = dict((n, int(c)) for n, c in
                  re.findall(r'<figure data-chart="([a-z]+)" data-points="(\d+)"', html))
    expected = expected_counts(parallax.read_run(a.run_dir))
    check("the charts are %s" % ", ".join(sorted(expected)), set(charts) == set(expected),
          "page has %s" % sorted(charts))
    for name in sorted(expected):
        check("chart %s draws %d values, as the files hold" % (name, expected[name]),
              charts.get(name) == expected[name], "page says %s" % charts.get(name))
    if a.all_charts:
        empty = [n for n, c in charts.items() if c == 0]
        check("every chart has data", not empty, "empty: %s" % empty)
    svgs = html.count("<svg ")
    check("one SVG per chart with data", svgs == sum(1 for c in charts.values() if c > 0),
          "%d SVGs" % svgs)

    if a.screenshot:
        pixels = png_pixels(a.screenshot).astype(np.int32)
        height, width = pixels.shape[:2]
        gray = (pixels == pixels[:, :, :1]).all(axis=2) & (pixels[:, :, 0] >= 250)
        share = 1 - gray.mean()  # not the page's near-white background
        blue = int((np.abs(pixels - [0x1f, 0x77, 0xb4]) < 12).all(axis=2).sum())
        check("the screenshot (%dx%d) is not blank: %.1f%% drawn, %d pixels of the first "
              "series' colour" % (width, height, 100 * share, blue), share > 0.05 and blue > 2000)
    print("%d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

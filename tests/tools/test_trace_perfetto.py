#!/usr/bin/env python3
"""tests/tools/test_trace_perfetto.py: `collscope trace --format perfetto` read back by an
independent reader, protoc --decode (Debian's protobuf-compiler) against the schema in
tools/trace/perfetto/, and compared with the JSON trace of the same dumps and selection:

  same   the same small dump set (tests/tools/gen_dumps, comm events, a salvage file next to rank 0's
         dump) written both ways, whole and with a selection (--ranks, --from/--to): the file
         decodes; every packet is a track descriptor, an interning packet or a track event;
         process and stream tracks carry the JSON's names; the slices (begin: track, name, ts,
         args; end: track, ts) and instants are those of the JSON, one for one; BEGIN count ==
         END count == the JSON's complete events; the members of an instance share a flow id.
  hostile the dumps' strings made odd (a very long UTF-8 host name, UTF-8 and control characters
         in op, site and dtype, a 54 KB site): the trace still decodes and the names still
         equal the JSON's (whose reader unescapes them)."""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def parse_text(text):
    """protobuf text format (as protoc --decode prints it) into nested dicts of lists"""
    tok = re.compile(r'\s*(?:(\})|([A-Za-z_][A-Za-z0-9_]*)\s*(\{|:\s*("(?:[^"\\]|\\.)*"|[^\s]+)))', re.S)
    root, stack, pos = collections.defaultdict(list), [], 0
    cur = root
    while True:
        m = tok.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise ValueError("cannot parse protoc output at %r" % text[pos:pos + 80])
            break
        pos = m.end()
        if m.group(1):
            cur = stack.pop()
        elif m.group(3) == "{":
            child = collections.defaultdict(list)
            cur[m.group(2)].append(child)
            stack.append(cur)
            cur = child
        else:
            v = m.group(4)
            if v.startswith('"'):
                v = unescape(v[1:-1])
            else:
                try:
                    v = int(v)
                except ValueError:
                    try:
                        v = float(v)
                    except ValueError:
                        pass  # enum names, true/false
            cur[m.group(2)].append(v)
    return root


def unescape(s):
    """a text-format string literal's bytes (C escapes, octal), decoded as UTF-8"""
    out, i = bytearray(), 0
    simple = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92, "a": 7, "b": 8, "f": 12, "v": 11}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
        elif s[i + 1] in simple:
            out.append(simple[s[i + 1]])
            i += 2
        elif s[i + 1] == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", s[i + 2:])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            m = re.match(r"[0-7]{1,3}", s[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("a string in the trace is not UTF-8: %r (%s)" % (bytes(out[:60]), e))


def one(d, k, default=None):
    v = d.get(k)
    return v[0] if v else default


def decode(protoc, proto, path):
    with open(path, "rb") as f:
        r = subprocess.run([protoc, "--decode=perfetto.protos.Trace", "-I", os.path.dirname(proto), proto], stdin=f,
                           capture_output=True, check=False)
    if r.returncode != 0:
        raise AssertionError("protoc --decode failed: %s" % r.stderr.decode(errors="replace")[:500])
    return parse_text(r.stdout.decode())


def perfetto_events(tr):
    """(tracks {uuid: (process name, track name)}, slices, ends, instants, flows) of a decoded trace,
    resolving each sequence's interned names in file order"""
    procs, tracks, children = {}, {}, []
    seqs = {}
    begins, ends, instants = [], [], []
    flows = collections.defaultdict(set)
    for p in tr["packet"]:
        sid = one(p, "trusted_packet_sequence_id", 0)
        flags = one(p, "sequence_flags", 0)
        if flags & 1:
            seqs[sid] = {"cat": {}, "arg": {}, "name": {}, "val": {}}
        st = seqs.get(sid)
        idata = one(p, "interned_data")
        if idata:
            assert st is not None, "interned data before the sequence was cleared"
            for key, field in (("cat", "event_categories"), ("arg", "debug_annotation_names"),
                               ("name", "event_names")):
                for e in idata.get(field, []):
                    st[key][one(e, "iid")] = one(e, "name")
            for e in idata.get("debug_annotation_string_values", []):
                st["val"][one(e, "iid")] = one(e, "str")
        td = one(p, "track_descriptor")
        if td:
            uuid = one(td, "uuid")
            assert uuid and uuid not in tracks and uuid not in procs, "track uuid missing or repeated"
            if one(td, "process"):
                procs[uuid] = one(one(td, "process"), "process_name")
            else:
                children.append((uuid, one(td, "parent_uuid"), one(td, "name")))
            continue
        te = one(p, "track_event")
        if not te:
            assert idata and not one(p, "timestamp"), "a packet that is neither track, interning nor event"
            continue
        assert flags & 2 and st is not None, "an event outside a cleared sequence"
        ts, track, typ = one(p, "timestamp"), one(te, "track_uuid"), one(te, "type")
        if typ == "TYPE_SLICE_END":
            ends.append((track, ts))
            continue
        name = one(te, "name") if "name" in te else st["name"][one(te, "name_iid")]
        args = {}
        for a in te.get("debug_annotations", []):
            k = st["arg"][one(a, "name_iid")]
            if "string_value_iid" in a:
                v = st["val"][one(a, "string_value_iid")]
            elif "pointer_value" in a:
                v = "0x%x" % one(a, "pointer_value")
            elif "bool_value" in a:
                v = one(a, "bool_value") == "true"
            else:
                v = one(a, "int_value", one(a, "double_value", one(a, "string_value")))
            args[k] = v
        cat = st["cat"][one(te, "category_iids")]
        ev = (track, name, cat, ts, args)
        if typ == "TYPE_SLICE_BEGIN":
            begins.append(ev)
            for fid in te.get("flow_ids", []):
                flows[fid].add((args.get("comm"), args.get("seq")))
        else:
            assert typ == "TYPE_INSTANT", typ
            instants.append(ev)
    for uuid, parent, name in children:
        assert parent in procs, "a track whose parent is not a process track"
        tracks[uuid] = (procs[parent], name)
    return procs, tracks, begins, ends, instants, flows


def ns(us_text):
    """a JSON "ts" (microseconds with three decimals, exact) in nanoseconds"""
    neg = us_text.startswith("-")
    a, _, b = us_text.lstrip("-").partition(".")
    v = int(a) * 1000 + int((b + "000")[:3])
    return -v if neg else v


def json_events(path):
    with open(path) as f:
        raw = f.read()
    # the timestamps as written (exact decimals), before floats round them
    tss = re.findall(r'"ts":(-?[0-9.]+)', raw)
    doc = json.loads(raw)
    evs = doc["traceEvents"]
    pname, tname = {}, {}
    k = 0
    out_x, out_i = [], []
    for e in evs:
        if e["ph"] == "M":
            if e["name"] == "process_name":
                pname[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                tname[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        t = ns(tss[k])
        k += 1
        if e["ph"] in ("s", "f"):
            continue
        key = (pname[e["pid"]], tname[(e["pid"], e["tid"])])
        if e["ph"] == "X":
            out_x.append((key, e["name"], e["cat"], t, round(float(e["dur"]) * 1000), e["args"]))
        else:
            out_i.append((key, e["name"], e["cat"], t, e["args"]))
    return pname, tname, out_x, out_i


def same_args(ja, pa):
    for k, v in ja.items():
        if v is None:
            assert k not in pa, "arg %s: null in JSON, present in perfetto" % k
            continue
        pv = pa.get(k)
        if isinstance(v, float):
            assert pv is not None and abs(float(pv) - v) <= 1e-9 * max(1.0, abs(v)), (k, v, pv)
        else:
            assert pv == v, "arg %s: JSON %r, perfetto %r" % (k, v, pv)
    assert set(pa) == {k for k, v in ja.items() if v is not None}, (sorted(pa), sorted(ja))


def take_match(cands, args):
    """removes and checks the candidate whose args equal the JSON's (events at one time and track
    may be several: a salvage file's records)"""
    for i, pa in enumerate(cands):
        try:
            same_args(args, pa)
        except AssertionError:
            continue
        del cands[i]
        return
    same_args(args, cands[0])  # raises, naming the first difference


def compare(cli, protoc, proto, d, tmp, extra, label):
    jpath, ppath = os.path.join(tmp, "t.json"), os.path.join(tmp, "t.pftrace")
    for fmt, path in (("json", jpath), ("perfetto", ppath)):
        r = subprocess.run([cli, "trace", d, "-o", path, "--format", fmt, "-j", "2"] + extra, capture_output=True,
                           text=True)
        assert r.returncode == 0, "%s: trace --format %s exited %d: %s" % (label, fmt, r.returncode, r.stderr)
    pname, tname, jx, ji = json_events(jpath)
    procs, tracks, begins, ends, instants, flows = perfetto_events(decode(protoc, proto, ppath))
    assert sorted(procs.values()) == sorted(pname.values()), "%s: process names differ" % label
    assert sorted(tracks.values()) == sorted((pname[p], n) for (p, _), n in tname.items()), \
        "%s: track names differ" % label
    # slices: begin (track, name, cat, ts, args) and end (track, ts), one for one
    assert len(begins) == len(ends) == len(jx), "%s: %d begins, %d ends, %d JSON slices" % (
        label, len(begins), len(ends), len(jx))
    pb = collections.defaultdict(list)
    for track, name, cat, ts, args in begins:
        pb[(tracks[track], name, cat, ts)].append(args)
    for key, name, cat, ts, dur, args in jx:
        got = pb.get((key, name, cat, ts))
        assert got, "%s: JSON slice %s %s at %d has no perfetto begin" % (label, key, name, ts)
        take_match(got, args)
    je = collections.Counter((key, ts + dur) for key, _, _, ts, dur, _ in jx)
    pe = collections.Counter((tracks[t], ts) for t, ts in ends)
    # the JSON's dur is rounded to 1 ns; the end may differ by that
    missing = je - pe
    for (key, t), n in list(missing.items()):
        for dt in (-1, 1):
            take = min(n, (pe - je)[(key, t + dt)])
            if take:
                missing[(key, t)] -= take
                pe[(key, t + dt)] -= take
                n -= take
    assert not +missing, "%s: %d slice ends differ, e.g. %s" % (label, sum((+missing).values()), list(+missing)[:3])
    assert len(instants) == len(ji), "%s: %d instants, JSON %d" % (label, len(instants), len(ji))
    pi = collections.defaultdict(list)
    for track, name, cat, ts, args in instants:
        pi[(tracks[track], name, cat, ts)].append(args)
    for key, name, cat, ts, args in ji:
        got = pi.get((key, name, cat, ts))
        assert got, "%s: JSON instant %s %s at %d missing" % (label, key, name, ts)
        take_match(got, args)
    for fid, members in flows.items():
        assert len(members) == 1, "%s: flow %x joins different instances %s" % (label, fid, members)
    js, ps = os.path.getsize(jpath), os.path.getsize(ppath)
    print("%s: %d slices, %d instants, %d tracks; JSON %d bytes, perfetto %d bytes (%.2fx)" % (
        label, len(jx), len(ji), len(tracks), js, ps, js / ps))
    return len(jx), len(ji)


def add_salvage(d):
    """rank 0's salvage file: its last 10 op lines (in the dump too) and 3 more with later seqs"""
    name = next(n for n in sorted(os.listdir(d)) if "-r0-" in n)
    with open(os.path.join(d, name)) as f:
        lines = f.read().splitlines()
    ops = [l for l in lines if l.startswith('{"type":"op"')][-10:]
    more = [re.sub(r'"seq":(\d+)', lambda m: '"seq":%d' % (int(m.group(1)) + 100000), l) for l in ops[-3:]]
    head = lines[0].replace('"exe":', '"salvaged_from":"/dev/shm/collscope-ring","exe":')
    with open(os.path.join(d, name.replace(".jsonl", ".salvage.jsonl")), "w") as f:
        f.write("\n".join([head] + ops + more) + "\n")


def make_hostile(d):
    """odd strings in every dump: a very long UTF-8 host, UTF-8 and control characters (escaped),
    in op, dtype and site, a 54 KB site (lines stay under the reader's 64 KiB), and an op, dtype
    and site of their own on every other record (1,200 values: past the 1,024 that one reading
    thread's sequence interns, when read with -j 1)"""
    # ~1.6 KB of UTF-8; "rank R (" + host is cut at 255 bytes inside a character, so the process
    # name is not UTF-8 unless the writer repairs it (as the JSON writer escapes it)
    long_host = "hx" + "n\u0153ud-\u65e5\u672c-" * 120
    for fi, n in enumerate(sorted(os.listdir(d))):
        p = os.path.join(d, n)
        with open(p, encoding="utf-8") as f:
            lines = f.read().splitlines()
        out = []
        for i, l in enumerate(lines):
            if l.startswith('{"type":"header"'):
                l = re.sub(r'"host":"[^"]*"', lambda m: '"host":' + json.dumps(long_host, ensure_ascii=False), l)
            elif l.startswith('{"type":"op"'):
                if i % 3 == 0:
                    l = l.replace('"op":"AllReduce"', '"op":"AllReduce\u2713\\u0001"')
                    l = l.replace('"dtype":"float32"', '"dtype":"fl\u00f6at\\t32"')
                elif i % 2 == 1:  # more distinct names and values than a sequence interns
                    l = re.sub(r'"op":"[^"]*"', lambda m: '"op":"Op\u00e9-%d-%d"' % (fi, i), l)
                    l = re.sub(r'"dtype":"[^"]*"', lambda m: '"dtype":"dt-%d-%d"' % (fi, i), l)
                    l = re.sub(r'"site":"[^"]*"', lambda m: '"site":"%s:%d"' % (n, i), l)
                if i % 50 == 0:
                    l = re.sub(r'"site":"[^"]*"', lambda m: '"site":"' + "\u00e9\\u001b[31m" * 4500 + '"', l)
                elif i % 7 == 0:
                    l = re.sub(r'"site":"[^"]*"', lambda m: '"site":"\U0001f600 caf\u00e9 \\"q\\" \\\\ x"', l)
            out.append(l)
        with open(p, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--protoc", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--only", choices=["same", "hostile"])
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-pftrace-")
    try:
        d = os.path.join(tmp, "dumps")
        subprocess.run([a.gen, "--ranks", "4", "--ops", "300", "--out", d, "--jobs", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        add_salvage(d)
        if a.only in (None, "same"):
            n, _ = compare(a.cli, a.protoc, a.proto, d, tmp, [], "whole")
            assert n >= 4 * 300, "whole: %d slices for 1200 records" % n
            m, _ = compare(a.cli, a.protoc, a.proto, d, tmp, ["--ranks", "1-2", "--from", "2.1", "--to", "2.4"],
                           "selection")
            assert 0 < m < n, "selection: %d slices of %d" % (m, n)
        if a.only in (None, "hostile"):
            make_hostile(d)
            n, _ = compare(a.cli, a.protoc, a.proto, d, tmp, ["-j", "1"], "hostile")
            assert n >= 4 * 300, "hostile: %d slices" % n
        print("ok")
        return 0
    except AssertionError as e:
        print("FAIL:", e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

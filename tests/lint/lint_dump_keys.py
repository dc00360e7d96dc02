#!/usr/bin/env python3
"""tests/lint/lint_dump_keys.py: no key of the dump schema is spelled outside
include/collscope/dump_schema.h (DESIGN.md "Dump files"): the writer, the generator and the
readers take their keys from the schema's lists.

Two spellings are checked, in C code with its comments removed:
  - a key as JSON text in a string literal (\\"key\\": ...), in every .c/.h of the product
    folders, bench/ and the synthetic dump generator;
  - a key as a plain string literal ("key") in the files that name dump fields by key
    (FIELD_NAMERS), where any literal equal to a key is one.
Known exceptions are listed below, each with its reason, and counted in the output; an
exception that no longer matches is reported (not a failure), so the list can shrink.

  lint_dump_keys.py --src ROOT
"""
import argparse
import os
import re
import sys

SCHEMA = 'include/collscope/dump_schema.h'
SCAN_DIRS = ['analysis', 'hooks', 'shim', 'stats', 'tools', 'topology', 'include', 'bench', 'integrations']
SCAN_FILES = ['tests/tools/gen_dumps.c']
FIELD_NAMERS = ['stats/dump_writer_records.c', 'tests/tools/gen_dumps.c', 'bench/bench_parse.c',
                'tools/trace/trace_perfetto.c']

# (path, keys or None for every key, reason)
EXCEPTIONS = [
    ('tools/cmd_salvage.c', None, "salvage's writer: moves onto the schema next"),
    ('hooks/health.c', {'gpu_name', 'gpu_uuid', 'gpu_serial', 'gpu_arch', 'gpu_power_limit_mw', 'gpu_pci_bus_id'},
     "the header's SOURCE rows, written by hooks/ through cs_dump_sources' header_extra: to take "
     "cs_dump_header_keys"),
    ('hooks/health.c', {'rank', 't_ns', 'replay'},
     'fields of "health" lines (formatted and read by hand, docs/health.md), named as the schema names its own'),
    ('hooks/health_ib.c', {'dev'}, 'a field of a "health" line\'s IB port (docs/health.md)'),
    ('tools/cmd_topo.c', {'host'}, 'the topology file\'s own document (docs/topology.md)'),
    ('tools/trace/trace_json.c', {'comm'}, "the JSON trace's own document (its args are named as the dump's)"),
    ('tools/trace/trace_perfetto.c', {'comm', 'host'},
     'the category of comm records and the name of the host track: values, not keys'),
    ('bench/accuracy_driver.c', {'rank', 'host', 'kind', 'comm', 'comm_size', 'seq'},
     "the accuracy driver's own result document (docs/accuracy.md)"),
]


def schema_keys(root):
    text = open(os.path.join(root, SCHEMA)).read()
    keys = set(re.findall(r'X\(\s*\w+\s*,\s*"(\w+)"', text))
    # a key given by a macro of another header (the header's slurm_node)
    for macro in set(re.findall(r'X\(\s*\w+\s*,\s*([A-Z_][A-Z0-9_]*)\s*,', text)):
        for dirpath, _, files in os.walk(os.path.join(root, 'include')):
            for f in files:
                m = re.search(r'#define\s+%s\s+"(\w+)"' % macro, open(os.path.join(dirpath, f)).read())
                if m:
                    keys.add(m.group(1))
    if len(keys) < 20:
        sys.exit('lint-dump-keys: only %d keys read from %s: the schema\'s layout changed' % (len(keys), SCHEMA))
    return keys


def literals(text):
    """(line, content) of every string literal, comments and character constants skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            line += text.count('\n', i, j)
            i = j
        elif c in '"\'':
            j, start = i + 1, line
            while j < n and text[j] != c:
                if text[j] == '\\':
                    j += 1
                if j < n and text[j] == '\n':
                    line += 1
                j += 1
            if c == '"':
                out.append((start, text[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


def files_to_scan(root):
    for d in SCAN_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(dirpath, f), root)
    for f in SCAN_FILES:
        if os.path.exists(os.path.join(root, f)):
            yield f


def excepted(path, key, used):
    for i, (p, keys, _) in enumerate(EXCEPTIONS):
        if p == path and (keys is None or key in keys):
            used.add(i)
            return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True)
    a = ap.parse_args()
    keys = schema_keys(a.src)
    json_key = re.compile(r'\\"(\w+)\\"\s*:')
    bad, used, excepted_hits = [], set(), 0
    for path in files_to_scan(a.src):
        if path == SCHEMA:
            continue
        for line, lit in literals(open(os.path.join(a.src, path), errors='replace').read()):
            found = [k for k in json_key.findall(lit) if k in keys]
            if path in FIELD_NAMERS and lit in keys:
                found.append(lit)
            for k in found:
                if excepted(path, k, used):
                    excepted_hits += 1
                else:
                    bad.append('%s:%d: dump key "%s" spelled by hand (take it from %s)' % (path, line, k, SCHEMA))
    for i, (p, ekeys, reason) in enumerate(EXCEPTIONS):
        if i not in used:
            print('lint-dump-keys: note: exception %s %s matches nothing now: drop it' % (p, sorted(ekeys) if ekeys else '*'))
    print('lint-dump-keys: %d keys; %d known exceptions (%d spellings):' % (len(keys), len(EXCEPTIONS), excepted_hits))
    for p, ekeys, reason in EXCEPTIONS:
        print('  %s %s: %s' % (p, ','.join(sorted(ekeys)) if ekeys else '*', reason))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

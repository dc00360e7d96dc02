#!/usr/bin/env python3
"""tests/lint/lint_file_size.py: no product file (.c, .h under the product folders) over
LIMIT lines (DESIGN.md "Data flow and folders"): a file that grows past it is split into files that each own one
thing. tests/ (the simulator included) is not product code.

  lint_file_size.py --src ROOT [--limit N]
"""
import argparse
import os
import sys

PRODUCT = ['analysis', 'hooks', 'shim', 'stats', 'tools', 'topology', 'include']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True)
    ap.add_argument('--limit', type=int, default=600)
    a = ap.parse_args()
    n, worst, bad = 0, (0, ''), []
    for d in PRODUCT:
        for dirpath, dirs, files in os.walk(os.path.join(a.src, d)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, 'rb') as fh:
                    lines = fh.read().count(b'\n')
                n += 1
                worst = max(worst, (lines, os.path.relpath(path, a.src)))
                if lines > a.limit:
                    bad.append('%s: %d lines (at most %d): split it by what each part owns' %
                               (os.path.relpath(path, a.src), lines, a.limit))
    print('lint-file-size: %d files, the longest %s (%d lines)' % (n, worst[1], worst[0]))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

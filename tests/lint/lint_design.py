#!/usr/bin/env python3
"""tests/lint/lint_design.py: DESIGN.md covers the tree. Fails when
  - a folder that holds files is not named in DESIGN.md as its path with a trailing slash:
    every top-level folder (docs/ and hidden ones aside), every folder under tools/, and the
    folders directly under tests/, bench/, include/ and integrations/;
  - a file cites a section of DESIGN.md (the file name, a space, the section's title in double
    quotes) that is not one of its headings (a heading's title is its text before " (").

  lint_design.py --src ROOT
"""
import argparse
import os
import re
import sys

TOP_SKIP = {'docs', 'build', 'subprojects'}
ONE_LEVEL = ['tests', 'bench', 'include', 'integrations']
RECURSIVE = ['tools']
TEXT_EXT = ('.c', '.h', '.cu', '.py', '.sh', '.md', '.build', '.txt', '.def', '.in', '.proto', '.json')
CITE = re.compile(r'DESIGN' + r'\.md "([^"\n]+)"')


def has_files(path):
    return any(os.path.isfile(os.path.join(path, f)) or os.path.isdir(os.path.join(path, f)) for f in os.listdir(path))


def folders(root):
    out = []
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if d.startswith('.') or d in TOP_SKIP or d.startswith('build') or not os.path.isdir(p) or not has_files(p):
            continue
        if os.path.exists(os.path.join(p, 'meson-private')):  # a build directory of any name
            continue
        out.append(d)
    for top in ONE_LEVEL:
        base = os.path.join(root, top)
        if os.path.isdir(base):
            out += [top + '/' + d for d in sorted(os.listdir(base))
                    if not d.startswith('.') and os.path.isdir(os.path.join(base, d)) and has_files(os.path.join(base, d))]
    for top in RECURSIVE:
        base = os.path.join(root, top)
        for dirpath, dirs, _ in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
            for d in dirs:
                if has_files(os.path.join(dirpath, d)):
                    out.append(os.path.relpath(os.path.join(dirpath, d), root))
    return out


def headings(design):
    heads = [m.group(1) for m in re.finditer(r'(?m)^#+\s+(.*\S)', design)]
    return heads, set(heads) | {h.split(' (')[0] for h in heads}


def citations(root):
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith('.') and not d.startswith('build')
                   and not os.path.exists(os.path.join(dirpath, d, 'meson-private'))]
        for f in files:
            if not (f.endswith(TEXT_EXT) or f == 'meson.build'):
                continue
            path = os.path.join(dirpath, f)
            try:
                text = open(path, errors='replace').read()
            except OSError:
                continue
            for n, line in enumerate(text.splitlines(), 1):
                for m in CITE.finditer(line):
                    yield os.path.relpath(path, root), n, m.group(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True)
    a = ap.parse_args()
    design = open(os.path.join(a.src, 'DESIGN.md')).read()
    bad = []
    fl = folders(a.src)
    for d in fl:
        if not re.search(r'(?<![\w/.-])' + re.escape(d) + '/', design):
            bad.append('DESIGN.md names no folder %s/' % d)
    heads, titles = headings(design)
    ncite = 0
    for path, n, title in citations(a.src):
        ncite += 1
        if title not in titles:
            bad.append('%s:%d: cites DESIGN.md section "%s", which is no heading of it' % (path, n, title))
    print('lint-design: %d folders, %d citations of %d headings' % (len(fl), ncite, len(heads)))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
# Counts the translation units whose project-include closure reaches each
# header given, e.g. `deploy/include-report.py . msgpack.hpp protocol/messages.h`
# (LIST=1 names them). A static reading of #include lines (no preprocessor):
# what a header diet is measured with.
import os, re, sys
root = sys.argv[1]; targets = sys.argv[2:]
inc = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
cache = {}
def includes(path):
    if path in cache: return cache[path]
    try: text = open(path, errors='replace').read()
    except OSError: cache[path] = []; return []
    out = []
    for name in inc.findall(text):
        p = os.path.join(root, name)
        if os.path.exists(p): out.append(('proj', p))
        else:
            q = os.path.join(os.path.dirname(path), name)
            out.append(('proj', q) if os.path.exists(q) else ('sys', name))
    cache[path] = out; return out
def closure(path):
    seen = set(); sysh = set(); stack = [path]
    while stack:
        p = stack.pop()
        for kind, n in includes(p):
            if kind == 'sys': sysh.add(n)
            elif n not in seen: seen.add(n); stack.append(n)
    return seen, sysh
tus = []
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if not x.startswith(('build', '.', 'node_modules'))]
    tus += [os.path.join(d, f) for f in files if f.endswith('.cc')]
counts = {t: [] for t in targets}
for tu in tus:
    seen, sysh = closure(tu)
    names = {os.path.relpath(s, root) for s in seen} | sysh
    for t in targets:
        if t in names: counts[t].append(os.path.relpath(tu, root))
print(f"{len(tus)} translation units")
for t in targets:
    print(f"{len(counts[t])} reach {t}")
    if os.environ.get('LIST'):
        for x in sorted(counts[t]): print('   ', x)

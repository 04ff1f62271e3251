#!/usr/bin/env python3
"""modorder.py MODDIR MODULE... - print the .ko files (relative to MODDIR) needed
to load MODULE... in dependency order (dependencies first), resolved from
MODDIR/modules.dep.  The order differs between kernel builds, so it is computed,
never hard-coded."""
import os
import sys


def main():
    moddir, wanted = sys.argv[1], sys.argv[2:]
    deps = {}
    byname = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            if ":" not in line:
                continue
            mod, rest = line.split(":", 1)
            mod = mod.strip()
            deps[mod] = rest.split()
            base = os.path.basename(mod)
            for suf in (".ko", ".ko.xz", ".ko.zst", ".ko.gz"):
                if base.endswith(suf):
                    base = base[: -len(suf)]
            byname[base.replace("-", "_")] = mod
    order, seen = [], set()

    def visit(mod, stack=()):
        if mod in seen:
            return
        if mod in stack:
            raise SystemExit("modorder: dependency cycle at " + mod)
        for d in deps.get(mod, []):
            visit(d, stack + (mod,))
        seen.add(mod)
        order.append(mod)

    for w in wanted:
        key = w.replace("-", "_")
        if key not in byname:
            raise SystemExit("modorder: module %s not in modules.dep (built in?)" % w)
        visit(byname[key])
    print("\n".join(order))


if __name__ == "__main__":
    main()

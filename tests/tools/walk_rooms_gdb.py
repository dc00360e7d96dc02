"""tests/tools/walk_rooms_gdb.py: run inside the debugger by test_walk_rooms.py: a breakpoint on
every function of tools/, analysis/ and stats/, the program run to its end, and at each stop the
stack (function@source file, innermost first) written as one line to $WALK_OUT."""
import glob
import os

import gdb

SRC = os.environ["WALK_SRC"]
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set breakpoint pending off")
for d in ("tools", "analysis", "stats"):
    for f in sorted(glob.glob(os.path.join(SRC, d, "**", "*.c"), recursive=True)):
        try:
            gdb.execute("rbreak %s:." % os.path.relpath(f, SRC), to_string=True)
        except gdb.error:
            pass
with open(os.environ["WALK_OUT"], "w") as out:
    gdb.execute("run", to_string=True)
    while True:
        try:
            f = gdb.newest_frame()
        except gdb.error:
            break  # the program ended
        stack = []
        while f is not None:
            fn = f.function()
            if fn is not None and fn.symtab is not None:
                stack.append("%s@%s" % (fn.name, os.path.relpath(fn.symtab.fullname(), SRC)))
            f = f.older()
        out.write(" ".join(stack) + "\n")
        try:
            gdb.execute("continue", to_string=True)
        except gdb.error:
            break

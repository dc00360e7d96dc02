"""tests/case_main.py: the command line the simulator test scripts share.

`SCRIPT CASE --cli COLLSCOPE --apps DIR` runs the script's case_CASE(cli, apps, tmp) with a
temporary directory that is removed afterwards, and prints "PASS CASE" when it returns.
A script calls run(globals(), "collscope-NAME-") from its main()."""
import argparse
import shutil
import tempfile


def run(cases, prefix):
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    fn = cases.get("case_" + a.case)
    if fn is None:
        ap.error("no case %r" % a.case)
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        fn(a.cli, a.apps, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS", a.case)

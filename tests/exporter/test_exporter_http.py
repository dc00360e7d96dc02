#!/usr/bin/env python3
"""tests/exporter/test_exporter_http.py CASE --cli COLLSCOPE

The exporter's HTTP endpoint under hostile clients, on 127.0.0.1 (each phase starts its own
`collscope exporter` on an empty ring directory and stops it by its pid):
  slowloris: 200 clients that send a request line and then a byte a second (a) all from
             127.0.0.1, the scraper's own address, (b) from 25 other loopback addresses, 8
             each: a fresh scrape is answered while they trickle, and the exposition it
             gets shows the room was made by evicting the oldest waiting connections (the
             exact count) before any header deadline expired; (c) one client trickling a
             byte every 0.2 s is closed by the absolute header deadline (counted once, as
             header_timeout), where an idle timeout reset by every byte never would;
             (d) a kept-alive connection idle for longer than that deadline still serves
             its next request.
  badlog:    1000 malformed requests: each is answered 400 and counted in
             collscope_exporter_bad_requests_total{reason="bad_request"}; libmicrohttpd's line
             per bad request reaches stderr at most once a minute.
  reasons:   every refused request counted once under its reason: 400, 404, 405, 414 (a
             request line too long), 431 (header fields too large) and 505 (HTTP/2.0), 25 of
             each, interleaved, on fresh and kept-alive connections: the counts are exact.
  errors:    a port in use names the port and the system's error; --shm-dir /nonexistent
             fails to start with a message naming the directory; the old flag --dir of
             exporter, top and salvage works with one deprecation line, --shm-dir with none.
The verdicts are counts, not times: the times are printed."""
import argparse, os, re, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request

SLOW = 200
REQUEST_LINE = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "
PER_CLIENT, MAX_CONNS = 8, 32  # tools/exporter/exporter_http.c


class Exporter:
    def __init__(self, cli, tmp, name):
        shm = os.path.join(tmp, name + "-shm")
        os.makedirs(shm)
        self.log = os.path.join(tmp, name + ".log")
        self.f = open(self.log, "w")
        self.p = subprocess.Popen([cli, "exporter", "--listen", "127.0.0.1:0", "--shm-dir", shm], stdout=self.f,
                                  stderr=subprocess.STDOUT)
        t0 = time.time()
        while True:
            m = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", self.text())
            if m:
                self.port = int(m.group(1))
                return
            if self.p.poll() is not None or time.time() - t0 > 30:
                self.stop()
                sys.exit("FAIL: the exporter did not start:\n" + self.text())
            time.sleep(0.05)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            os.kill(self.p.pid, 15)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.p.pid, 9)
                self.p.wait()
        self.f.close()

    def scrape(self, timeout=30):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=timeout) as r:
            return r.read().decode()


def bad_requests(body):
    """{reason: count} of collscope_exporter_bad_requests_total in an exposition"""
    got = {m.group(1): int(float(m.group(2)))
           for m in re.finditer(r'^collscope_exporter_bad_requests_total\{reason="(\w+)"\} (\S+)$', body, re.M)}
    assert set(got) == set(REASONS) | {"header_timeout", "evicted", "refused"}, body[-2000:]
    return got


# the reasons of answered requests (tools/exporter/exporter_metrics.c) and what makes each
REASONS = {
    "bad_request": b"GET /metrics HTTP/1.1\r\nHost: x\r\nthis is no header line\r\n\r\n",
    "not_found": b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n",
    "method_not_allowed": b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
    "payload_too_large": None,
    "uri_too_long": b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "header_too_large": b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40000 + b"\r\n\r\n",
    "http_version_not_supported": b"GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n",
    "server_error": None,
    "rejected": None,
}
STATUS = {"bad_request": 400, "not_found": 404, "method_not_allowed": 405, "uri_too_long": 414,
          "header_too_large": 431, "http_version_not_supported": 505}


def answered(bad):
    return sum(bad[r] for r in REASONS)


class Trickle:
    """Slow clients: a request line, then one byte a second on every socket still open."""

    def __init__(self, port, sources):
        self.socks = []
        for src in sources:
            s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(src, 0))
            s.sendall(REQUEST_LINE)
            self.socks.append(s)
        self.stopped = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stopped.wait(1.0):
            for s in self.socks:
                try:
                    s.send(b"a", socket.MSG_DONTWAIT)
                except OSError:
                    pass

    def close(self):
        self.stopped.set()
        self.t.join()
        for s in self.socks:
            s.close()


def fresh_scrape(a, tmp, name, sources, want_evicted):
    ex = Exporter(a.cli, tmp, name)
    slow = None
    try:
        slow = Trickle(ex.port, sources)
        t0 = time.time()
        body = ex.scrape()
        dt = time.time() - t0
        bad = bad_requests(body)
        print("%s: %d slow clients from %d address(es): fresh scrape answered in %.3f s; bad requests %s" % (
            name, len(sources), len(set(sources)), dt, bad))
        # answered before any header deadline expired: the room was made by eviction alone
        assert bad["header_timeout"] == 0, bad
        assert bad["evicted"] + bad["refused"] == want_evicted and answered(bad) == 0, (bad, want_evicted)
    finally:
        if slow:
            slow.close()
        ex.stop()


def deadline_closes(a, tmp):
    ex = Exporter(a.cli, tmp, "deadline")
    try:
        s = socket.create_connection(("127.0.0.1", ex.port), timeout=10)
        s.sendall(REQUEST_LINE)
        t0, sent, closed = time.time(), 0, False
        while time.time() - t0 < 60:  # libmicrohttpd's idle timeout is 30 s, reset by every byte
            time.sleep(0.2)
            try:
                s.send(b"a")
                sent += 1
                s.setblocking(False)
                closed = s.recv(100) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed = True
            finally:
                s.setblocking(True)
            if closed:
                break
        dt = time.time() - t0
        s.close()
        bad = bad_requests(ex.scrape())
        print("deadline: a client trickling a byte every 0.2 s was %s after %.1f s and %d bytes; bad requests %s" % (
            "closed" if closed else "NOT closed", dt, sent, bad))
        assert closed, "a slow client held its connection for %.0f s" % dt
        assert bad["header_timeout"] == 1 and sum(bad.values()) == 1, bad

        # a kept-alive connection idle past the first header's deadline serves its next request
        k = socket.create_connection(("127.0.0.1", ex.port), timeout=10)
        replies = []
        for i in range(2):
            if i:
                time.sleep(6)
            k.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                d = k.recv(1)
                assert d, "the kept-alive connection was closed (request %d)" % i
                head += d
            n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            got = b""
            while len(got) < n:
                d = k.recv(n - len(got))
                assert d
                got += d
            replies.append(head.split(b"\r\n")[0])
        k.close()
        print("keep-alive: two requests 6 s apart on one connection: %s" % replies)
        assert replies == [b"HTTP/1.1 200 OK"] * 2, replies
    finally:
        ex.stop()


def case_slowloris(a, tmp):
    fresh_scrape(a, tmp, "one-address", ["127.0.0.1"] * SLOW, SLOW + 1 - PER_CLIENT)
    others = ["127.0.0.%d" % (2 + i // PER_CLIENT) for i in range(SLOW)]
    fresh_scrape(a, tmp, "many-addresses", others, SLOW + 1 - MAX_CONNS)
    deadline_closes(a, tmp)


def case_badlog(a, tmp):
    ex = Exporter(a.cli, tmp, "badlog")
    n, t0 = 1000, time.time()
    try:
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", ex.port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nthis is no header line\r\n\r\n")
            reply = s.recv(64)
            s.close()
            assert reply.startswith(b"HTTP/1.1 400"), (i, reply)
        bad = bad_requests(ex.scrape())
    finally:
        ex.stop()
    dt = time.time() - t0
    log = ex.text()
    lines = [l for l in log.splitlines() if "exporter: http: " in l]
    print("badlog: %d malformed requests in %.1f s: bad requests %s; stderr %d bytes, %d line(s) from the HTTP "
          "server:\n%s" % (n, dt, bad, len(log), len(lines), "\n".join(lines)))
    assert bad["bad_request"] == n and sum(bad.values()) == n, bad
    assert 1 <= len(lines) <= 1 + int(dt // 60) + 1, lines  # one a minute, and the last count at the stop
    assert len(log) < 1000 * (1 + int(dt // 60) + 1), len(log)


def case_reasons(a, tmp):
    ex = Exporter(a.cli, tmp, "reasons")
    n = 25
    sent = dict.fromkeys(STATUS, 0)
    try:
        for i in range(n):
            for reason, status in STATUS.items():
                s = socket.create_connection(("127.0.0.1", ex.port), timeout=10)
                if i % 2:   # a served request first: the refused one comes on a kept-alive connection
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                    assert read_reply(s).startswith(b"HTTP/1.1 200"), reason
                try:
                    s.sendall(REASONS[reason])
                except OSError:
                    pass   # closed on the first bytes that overflowed: the reply is there
                reply = read_reply(s)
                s.close()
                assert reply.startswith(b"HTTP/1.1 %d" % status), (reason, reply[:80])
                sent[reason] += 1
        time.sleep(0.5)   # the last connections closed on the server's side too
        bad = bad_requests(ex.scrape())
    finally:
        ex.stop()
    print("reasons: sent %s; counted %s" % (sent, bad))
    for reason in REASONS:
        assert bad[reason] == sent.get(reason, 0), (reason, bad, sent)
    assert sum(bad.values()) == sum(sent.values()), (bad, sent)


def read_reply(s):
    """one whole response (headers and Content-Length body) or what came before the close"""
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            c = s.recv(65536)
        except OSError:
            return buf
        if not c:
            return buf
        buf += c
    head, _, body = buf.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    want = int(m.group(1)) if m else 0
    while len(body) < want:
        c = s.recv(65536)
        if not c:
            break
        body += c
    return head


def case_errors(a, tmp):
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    p = subprocess.run([a.cli, "exporter", "--listen", "127.0.0.1:%d" % port, "--shm-dir", shm],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    busy.close()
    print("port in use:", p.stderr.strip())
    assert p.returncode == 1 and "port %d: Address already in use" % port in p.stderr, p.stderr
    assert "port 0" not in p.stderr, p.stderr
    p = subprocess.run([a.cli, "exporter", "--listen", "127.0.0.1:0", "--shm-dir", "/nonexistent"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    print("no ring directory:", p.stderr.strip())
    assert p.returncode == 1 and p.stderr == ("collscope exporter: the ring directory /nonexistent (--shm-dir) cannot "
                                             "be read: No such file or directory\n"), p.stderr
    dep = "is deprecated, use --shm-dir"
    for cmd in (["exporter", "--once"], ["top", "--once"], ["salvage", "-o", os.path.join(tmp, "salv")]):
        rcs = {}
        for flag in ("--shm-dir", "--dir"):
            p = subprocess.run([a.cli] + cmd + [flag, shm], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=30)
            lines = [l for l in p.stderr.splitlines() if dep in l]
            print("%s %s: rc %d, stderr %r" % (cmd[0], flag, p.returncode, p.stderr.strip()))
            assert lines == (["collscope %s: --dir %s" % (cmd[0], dep)] if flag == "--dir" else []), p.stderr
            rcs[flag] = p.returncode
            if cmd[0] == "top":
                assert "(rings in %s)" % shm in p.stdout, p.stdout
            if cmd[0] == "salvage":
                assert "no ring of a dead process in %s" % shm in p.stderr, p.stderr
        assert rcs["--dir"] == rcs["--shm-dir"], rcs   # the same command either way


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-exporter-http-")
    try:
        globals()["case_" + a.case](a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS", a.case)


if __name__ == "__main__":
    main()

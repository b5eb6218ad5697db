#!/usr/bin/env python3
"""Captures raw RESP2 and RESP3 replies from a real redis-server for commands_test.cpp.

Usage: tests/unit/commands/capture_fixtures.py > tests/unit/commands/fixtures.inc
Starts redis-server on a free loopback port, runs a fixed script of commands in both
protocols, and prints each reply as a C++ string literal. Dev-only; the output is committed.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def raw(self, *args):
        """Sends one command and returns its reply's exact bytes."""
        self.sock.sendall(encode(args))
        while True:
            end = self._reply_end(0)
            if end is not None:
                reply, self.buf = self.buf[:end], self.buf[end:]
                return reply
            self.buf += self.sock.recv(65536)

    def _line(self, pos):
        end = self.buf.find(b"\r\n", pos)
        return None if end < 0 else (self.buf[pos:end], end + 2)

    def _reply_end(self, pos):
        got = self._line(pos)
        if got is None:
            return None
        line, nxt = got
        kind, body = line[:1], line[1:]
        if kind in b"+-:_#,(":
            return nxt
        if kind in b"$!=":
            n = int(body)
            if n < 0:
                return nxt
            return nxt + n + 2 if len(self.buf) >= nxt + n + 2 else None
        if kind in b"*~>%|":
            n = int(body)
            if n < 0:
                return nxt
            if kind in b"%|":
                n *= 2
            for _ in range(n):
                nxt = self._reply_end(nxt)
                if nxt is None:
                    return None
            return nxt
        raise ValueError(line)


SETUP = [
    ["FLUSHALL"],
    ["SET", "s", "v"],
    ["HSET", "h", "f1", "v1", "f2", "v2"],
    ["ZADD", "z", "1", "a", "2.5", "b", "inf", "c"],
    ["RPUSH", "l", "x", "y", "z"],
    ["SADD", "st", "m1"],
    ["CLIENT", "SETNAME", "fixture-conn"],
]

# name -> command; captured in RESP2 and RESP3.
COMMANDS = [
    ("zrange_withscores", ["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
    ("hgetall", ["HGETALL", "h"]),
    ("zscore", ["ZSCORE", "z", "b"]),
    ("zscore_inf", ["ZSCORE", "z", "c"]),
    ("zmscore", ["ZMSCORE", "z", "a", "nope"]),
    ("zpopmin_count", ["ZPOPMIN", "z", "1"]),
    ("zadd_incr_nx_nil", ["ZADD", "z", "NX", "INCR", "1", "b"]),
    ("scan", ["SCAN", "0", "MATCH", "s*", "COUNT", "100"]),
    ("lmpop", ["LMPOP", "2", "nolist", "l", "LEFT", "COUNT", "2"]),
    ("lmpop_nil", ["LMPOP", "1", "nolist", "LEFT"]),
    ("lpop_count_nil", ["LPOP", "nolist", "2"]),
    ("hrandfield_withvalues", ["HRANDFIELD", "h", "1", "WITHVALUES"]),
    ("smismember", ["SMISMEMBER", "st", "m1", "m2"]),
    ("smembers", ["SMEMBERS", "st"]),
    ("set_nx_nil", ["SET", "s", "v2", "NX"]),
    ("set_ok", ["SET", "s", "v"]),
    ("time", ["TIME"]),
    ("info", ["INFO"]),
    ("client_list", ["CLIENT", "LIST"]),
    ("incrbyfloat", ["INCRBYFLOAT", "f", "1.5"]),
    ("wrongtype", ["LPUSH", "s", "x"]),
]


def literal(data):
    out = []
    for b in data:
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\r":
            out.append("\\r")
        elif c == "\n":
            out.append("\\n")
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append("\\x%02x\"\"" % b)
    text = "".join(out)
    # One source line per reply line keeps the file readable.
    lines = text.replace("\\n", '\\n"\n    "')
    if lines.endswith('\n    "'):
        return '"' + lines[: -len('\n    "')]
    return '"' + lines + '"'


def main():
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="redmux-fixtures-")
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                probe = Conn(port)
                break
            except OSError:
                time.sleep(0.05)
        version = subprocess.run(["redis-server", "--version"], capture_output=True,
                                 text=True).stdout.split()[2]
        print("// Raw replies captured by capture_fixtures.py from redis-server %s; do not edit."
              % version)
        print("// clang-format off")
        for proto in (2, 3):
            conn = Conn(port)
            conn.raw("HELLO", str(proto))
            other = Conn(port)  # a second client, so CLIENT LIST has two lines
            for cmd in SETUP:
                conn.raw(*cmd)
            for name, cmd in COMMANDS:
                reply = conn.raw(*cmd)
                print("inline constexpr std::string_view k%s_resp%d =\n    %s;" % (
                    "".join(p.capitalize() for p in name.split("_")), proto, literal(reply)))
            other.sock.close()
            conn.sock.close()
        probe.sock.close()
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

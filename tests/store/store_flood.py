"""A local attacker's flood of a TCPStore, as torch 2.x's wire protocol frames it (run as
another Unix user by tests/store/store_flood_test.cc; no torch needed).

    store_flood.py queue PORT COUNT
        one connection sends VALIDATE and COUNT (a multiple of 10000) empty QUEUE_PUSH to queue "/flood" at once;
        prints "closed by the store" or "not closed", then, on a new connection, the
        queue's length: "queue length N".
    store_flood.py wait PORT CONNECTIONS KEYS
        CONNECTIONS connections each park one WAIT on KEYS keys of 60000 bytes; prints how
        many the store closed: "closed K of CONNECTIONS".
"""

import socket
import struct
import sys

VALIDATE = b"\x00" + struct.pack("<I", 0x3C85F7CE)


def text(data):
    return struct.pack("<Q", len(data)) + data


def connect(port):
    connection = socket.create_connection(("127.0.0.1", port), timeout=20)
    connection.sendall(VALIDATE)
    return connection


def closed_by_store(connection, seconds):
    """Whether the store ends the connection within `seconds` (what it sends is dropped)."""
    connection.settimeout(seconds)
    try:
        while True:
            if not connection.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def send_all(connection, data):
    """False once the store has closed the connection (what closed_by_store reports)."""
    try:
        connection.sendall(data)
        return True
    except OSError:
        return False


def queue_flood(port, count):
    connection = connect(port)
    push = b"\x0e" + text(b"/flood") + text(b"")
    batch = push * 10000
    for _ in range(count // 10000):
        if not send_all(connection, batch):
            break
    try:
        connection.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # closed by the store already
    print("closed by the store" if closed_by_store(connection, 10) else "not closed", flush=True)
    probe = connect(port)
    probe.sendall(b"\x10" + text(b"/flood"))  # QUEUE_LEN
    reply = b""
    while len(reply) < 8:
        reply += probe.recv(8 - len(reply))
    print("queue length %d" % struct.unpack("<q", reply)[0], flush=True)


def wait_flood(port, connections, keys):
    held = []
    for index in range(connections):
        connection = connect(port)
        wait = b"\x06" + struct.pack("<Q", keys)
        for key in range(keys):
            wait += text(b"/%d/%d/" % (index, key) + b"k" * 60000)
        send_all(connection, wait)
        held.append(connection)
    closed = sum(1 for connection in held if closed_by_store(connection, 3))
    print("closed %d of %d" % (closed, connections), flush=True)


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "queue":
        queue_flood(port, int(sys.argv[3]))
    else:
        wait_flood(port, int(sys.argv[3]), int(sys.argv[4]))

"""Workers that use torch's store queues (TCPStore.queue_push / queue_pop / queue_len, torch
2.7 and later) on the store pltrun gives them (MASTER_ADDR:MASTER_PORT, the agent store).

Debian's torch is built without libuv and its client refuses queues, so this speaks the
wire protocol itself, as torch's libuv client does (TCPStore.cpp): VALIDATE and PING first,
every key with torch's "/" prefix, a blocking pop as WAIT on the queue's name then QUEUE_POP.
Rank 0 pushes 99 jobs and one "stop" per other rank, then pops 99 replies; the other ranks
pop jobs (blocking, all at once) until "stop", pushing each job back with a "!".
Usage: queue_workers.py  (prints one line per rank; exits non-zero on any mismatch)
"""

import os
import socket
import struct
import sys

VALIDATE, WAIT, QUEUE_PUSH, QUEUE_POP, QUEUE_LEN, PING = 0, 6, 14, 15, 16, 13


class QueueClient:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.sendall(struct.pack("<BI", VALIDATE, 0x3C85F7CE))
        self.sock.sendall(struct.pack("<BI", PING, 77))
        assert self._read("<I") == 77, "PING answered with another nonce"

    def _read(self, fmt):
        size = struct.calcsize(fmt)
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the store closed the connection")
            data += chunk
        return struct.unpack(fmt, data)[0]

    def _bytes(self):
        size = self._read("<Q")
        data = b""
        while len(data) < size:
            data += self.sock.recv(size - len(data))
        return data

    @staticmethod
    def _text(value):
        return struct.pack("<Q", len(value)) + value

    def push(self, queue, item):
        self.sock.sendall(bytes([QUEUE_PUSH]) + self._text(b"/" + queue) + self._text(item))

    def pop(self, queue):
        self.sock.sendall(bytes([WAIT]) + struct.pack("<Q", 1) + self._text(b"/" + queue))
        assert self._read("<B") == 0, "WAIT answered with something else than STOP_WAITING"
        self.sock.sendall(bytes([QUEUE_POP]) + self._text(b"/" + queue))
        if self._read("<q") <= 0:
            raise RuntimeError("queue is empty")  # what torch raises (DistQueueEmptyError)
        return self._bytes()

    def length(self, queue):
        self.sock.sendall(bytes([QUEUE_LEN]) + self._text(b"/" + queue))
        return self._read("<q")


def main():
    rank, others = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]) - 1
    store = QueueClient(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    if rank == 0:
        for i in range(99):
            store.push(b"jobs", b"job%d" % i)
        for _ in range(others):
            store.push(b"jobs", b"stop")
        replies = sorted(store.pop(b"done") for _ in range(99))
        expected = sorted(b"job%d!" % i for i in range(99))
        if replies != expected:
            sys.exit(f"rank 0: wrong replies {replies[:3]}...")
        # The others may not have popped their "stop" yet: at most one each is left.
        left = store.length(b"jobs")
        if left > others:
            sys.exit(f"rank 0: {left} items left in the jobs queue")
        print("rank 0: 99 replies", flush=True)
    else:
        handled = 0
        while (item := store.pop(b"jobs")) != b"stop":
            store.push(b"done", item + b"!")
            handled += 1
        print(f"rank {rank}: handled {handled}", flush=True)


if __name__ == "__main__":
    main()

"""Drives a TCPStore server through every call of torch's own TCPStore client, asserting
torch's semantics. Usage: torch_store_client.py PORT [--torch2]. With --torch2 (torch 2.x,
e.g. in the trixie chroot) the libuv client is off (Debian's build lacks libuv) and the
2.x-only calls (check, append, multi_get/multi_set; list_keys and barrier where the torch
has them) are exercised too."""

import datetime
import sys
import threading
import time

from torch.distributed import TCPStore

PORT = int(sys.argv[1])
TORCH2 = "--torch2" in sys.argv


def client():
    extra = {"use_libuv": False} if TORCH2 else {}
    return TCPStore("127.0.0.1", PORT, is_master=False, timeout=datetime.timedelta(seconds=10), **extra)


def main():
    store, other = client(), client()

    store.set("key", "value")
    assert store.get("key") == b"value"
    store.set("bin", b"\x00\x01\xff")
    assert other.get("bin") == b"\x00\x01\xff"

    assert store.add("counter", 5) == 5
    assert other.add("counter", 2) == 7
    assert store.get("counter") == b"7"

    assert store.compare_set("cas", "x", "y") == b"x"  # missing key, non-empty expected: unchanged
    assert store.compare_set("cas", "", "first") == b"first"  # missing key, empty expected: created
    assert store.compare_set("cas", "wrong", "second") == b"first"
    assert store.compare_set("cas", "first", "second") == b"second"

    # wait without a timeout: another client sets the key later
    setter = threading.Timer(0.2, lambda: client().set("late", "1"))
    setter.start()
    store.wait(["late"])
    setter.join()

    # wait with a timeout: it fires, within bounds, and the client stays usable
    start = time.monotonic()
    try:
        store.wait(["never"], datetime.timedelta(seconds=0.5))
        raise AssertionError("wait on a missing key returned")
    except RuntimeError:
        pass
    elapsed = time.monotonic() - start
    assert 0.4 <= elapsed < 5, elapsed
    store.set("after-timeout", "ok")
    assert store.get("after-timeout") == b"ok"

    before = store.num_keys()
    store.set("one-more", "1")
    assert store.num_keys() == before + 1

    assert store.delete_key("key") is True
    assert store.delete_key("key") is False

    if TORCH2:
        assert store.check(["bin", "counter"])
        assert not store.check(["bin", "nope"])
        store.append("log", "a")
        store.append("log", "bc")
        assert store.get("log") == b"abc"
        store.multi_set(["m1", "m2"], ["1", "2"])
        assert store.multi_get(["m1", "m2"]) == [b"1", b"2"]

    if hasattr(store, "list_keys"):  # torch 2.8 and later: LIST_KEYS, on any server
        keys = set(store.list_keys())
        assert {"bin", "counter", "cas", "late", "m1", "m2", "log"} <= keys, keys
        assert "key" not in keys  # deleted above
        store.barrier("together", 1)  # 2.14's Store.barrier, on ADD and WAIT
        print("list_keys and barrier behaved")

    print("all torch TCPStore calls behaved")


if __name__ == "__main__":
    main()

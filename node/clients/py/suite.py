"""The etcd data-model checks through PyPI's `etcd3` client.

One run prints one JSON line per check:
{"client": "pypi-etcd3", "check": NAME, "ok": BOOL, "detail": TEXT}. Every
check states what etcd 3.4 does; node/tests/it/client_libraries.rs runs this
file against real etcd and against leasesim-node and compares the verdicts.
The check names match node/clients/js/suite.js where the two clients can
express the same thing (this client has no election API).

Usage: python suite.py --endpoint 127.0.0.1:2379 [--only NAME]
"""

import argparse
import json
import os
import queue
import sys
import time

import etcd3
import etcd3.events

STEP_TIMEOUT_S = 8.0


class CheckFailed(Exception):
    pass


def expect(cond, detail):
    if not cond:
        raise CheckFailed(detail)


def read_at(c, key, revision):
    """Range at a past revision, through the client's own request builder."""
    request = c._build_get_range_request(key)
    request.revision = revision  # the builder drops its `revision` argument
    response = c.kvstub.Range(request, c.timeout, credentials=c.call_credentials, metadata=c.metadata)
    return response.kvs[0].value if response.kvs else None


def events_of(c, key, count, action, **watch_args):
    """Watches `key`, runs `action`, and returns the first `count` events
    (or raises when they do not come within STEP_TIMEOUT_S)."""
    responses = queue.Queue()
    watch_id = c.add_watch_callback(key, responses.put, **watch_args)
    try:
        action()
        events = []
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while len(events) < count:
            left = deadline - time.monotonic()
            try:
                response = responses.get(timeout=max(left, 0.01))
            except queue.Empty:
                raise CheckFailed(f"{len(events)} of {count} events within {STEP_TIMEOUT_S} s")
            if isinstance(response, Exception):
                raise response
            events.extend(response.events)
        return events
    finally:
        c.cancel_watch(watch_id)


def describe(event):
    kind = "put" if isinstance(event, etcd3.events.PutEvent) else "delete"
    return f"{kind}:{event.value.decode('latin-1')}"


def kv_put_get(c, p):
    c.put(p + "k", "v1")
    value, _ = c.get(p + "k")
    expect(value == b"v1", f"read {value!r}, wrote v1")


def kv_bytes_values(c, p):
    raw = bytes([0xFF, 0x00, 0xFE, 0x80])
    c.put(p + "k", raw)
    value, _ = c.get(p + "k")
    expect(value == raw, f"read {value!r}, wrote {raw!r}")


def kv_version_counts_writes(c, p):
    for v in ("a", "b", "c"):
        c.put(p + "k", v)
    _, meta = c.get(p + "k")
    expect(meta.version == 3, f"version {meta.version} after three puts")
    expect(meta.create_revision + 2 == meta.mod_revision,
           f"create_revision {meta.create_revision}, mod_revision {meta.mod_revision}")


def kv_one_revision_per_write(c, p):
    a = c.put(p + "a", "1").header.revision
    b = c.put(p + "b", "2").header.revision
    expect(b - a == 1, f"revisions {a} then {b}")


def kv_prev_kv_on_put(c, p):
    c.put(p + "k", "old")
    response = c.put(p + "k", "new", prev_kv=True)
    expect(response.prev_kv.value == b"old", f"previous {response.prev_kv.value!r}")


def kv_prev_kv_on_delete(c, p):
    c.put(p + "k", "gone")
    response = c.delete(p + "k", prev_kv=True, return_response=True)
    expect(len(response.prev_kvs) == 1 and response.prev_kvs[0].value == b"gone", f"previous {response.prev_kvs}")


def kv_delete_prefix(c, p):
    for k in ("a", "b", "c"):
        c.put(f"{p}d/{k}", k)
    response = c.delete_prefix(p + "d/")
    expect(response.deleted == 3, f"deleted {response.deleted}")
    expect(len(list(c.get_prefix(p + "d/"))) == 0, "keys left under the prefix")


def kv_read_at_past_revision(c, p):
    first = c.put(p + "k", "then").header.revision
    c.put(p + "k", "now")
    value = read_at(c, p + "k", first)
    expect(value == b"then", f"read {value!r} at revision {first}")


def kv_compacted_revision_refused(c, p):
    first = c.put(p + "k", "1").header.revision
    second = c.put(p + "k", "2").header.revision
    c.compact(second)
    try:
        read_at(c, p + "k", first)
    except Exception as e:  # the client raises grpc's own error here
        expect("compacted" in str(e), f"reading below the compaction: {e}")
        return
    raise CheckFailed("reading below the compaction succeeded")


def kv_txn(c, compare, success, failure=None):
    return c.transaction(compare=compare, success=success, failure=failure or [])


def txn_several_compares(c, p):
    t = c.transactions
    c.put(p + "a", "x")
    ok, _ = kv_txn(c, [t.value(p + "a") == b"x", t.version(p + "b") == 0], [t.put(p + "then", "1")], [t.put(p + "else", "1")])
    expect(ok, "both compares hold, the else branch ran")
    ok, _ = kv_txn(c, [t.value(p + "a") == b"x", t.version(p + "a") == 9], [t.put(p + "then2", "1")], [t.put(p + "else2", "1")])
    expect(not ok, "the second compare fails, the then branch ran")


def txn_version_compare(c, p):
    t = c.transactions
    c.put(p + "k", "1")
    c.put(p + "k", "2")
    ok, _ = kv_txn(c, [t.version(p + "k") == 2], [t.put(p + "ok", "1")])
    expect(ok, "version 2 after two puts, but the compare failed")


def txn_atomic_one_revision(c, p):
    t = c.transactions
    kv_txn(c, [t.version(p + "none") == 0], [t.put(p + "x", "1"), t.put(p + "y", "1"), t.delete(p + "z")])
    _, x = c.get(p + "x")
    _, y = c.get(p + "y")
    expect(x.mod_revision == y.mod_revision, f"x at {x.mod_revision}, y at {y.mod_revision}")


def txn_duplicate_key_refused(c, p):
    t = c.transactions
    try:
        kv_txn(c, [t.version(p + "none") == 0], [t.put(p + "k", "1"), t.put(p + "k", "2")])
    except Exception as e:
        expect("duplicate key" in str(e), f"a key written twice: {e}")
        return
    raise CheckFailed("a key written twice: accepted")


def watch_burst_delivers_every_event(c, p):
    def burst():
        c.put(p + "k", "1")
        c.put(p + "k", "2")
        c.delete(p + "k")

    seen = ",".join(describe(e) for e in events_of(c, p + "k", 3, burst))
    expect(seen == "put:1,put:2,delete:", f"saw {seen}")


def watch_start_revision_replays(c, p):
    first = c.put(p + "k", "1").header.revision
    c.put(p + "k", "2")
    c.put(p + "k", "3")
    seen = ",".join(describe(e) for e in events_of(c, p + "k", 3, lambda: None, start_revision=first))
    expect(seen == "put:1,put:2,put:3", f"replayed {seen}")


def watch_prev_kv(c, p):
    c.put(p + "k", "before")
    events = events_of(c, p + "k", 1, lambda: c.put(p + "k", "after"), prev_kv=True)
    expect(events[0].prev_value == b"before", f"prev_kv {events[0].prev_value!r}")


def lease_grant_put_revoke(c, p):
    lease = c.lease(30)
    c.put(p + "k", "v", lease=lease)
    expect(0 < lease.remaining_ttl <= 30, f"ttl {lease.remaining_ttl}")
    expect(lease.keys == [(p + "k").encode()], f"keys {lease.keys}")
    lease.revoke()
    value, _ = c.get(p + "k")
    expect(value is None, f"key still {value!r} after its lease was revoked")


def lease_keepalive_once(c, p):
    lease = c.lease(30)
    answers = lease.refresh()
    expect(answers and answers[0].TTL == 30, f"keep-alive answered {answers}")
    lease.revoke()


def lock_mutual_exclusion(c, p):
    # This client's lock waits (up to its timeout) and stores a random
    # UUID as the lock key's value: bytes, not text.
    first = c.lock(p + "lock", ttl=30)
    expect(first.acquire(timeout=5), "the first acquire failed")
    second = c.lock(p + "lock", ttl=30)
    expect(not second.acquire(timeout=1), "two holders of one lock")
    first.release()
    expect(second.acquire(timeout=5), "the second acquire after a release failed")
    second.release()


CHECKS = {
    "kv.put-get": kv_put_get,
    "kv.bytes-values": kv_bytes_values,
    "kv.version-counts-writes": kv_version_counts_writes,
    "kv.one-revision-per-write": kv_one_revision_per_write,
    "kv.prev-kv-on-put": kv_prev_kv_on_put,
    "kv.prev-kv-on-delete": kv_prev_kv_on_delete,
    "kv.delete-prefix": kv_delete_prefix,
    "kv.read-at-past-revision": kv_read_at_past_revision,
    "kv.compacted-revision-refused": kv_compacted_revision_refused,
    "txn.several-compares": txn_several_compares,
    "txn.version-compare": txn_version_compare,
    "txn.atomic-one-revision": txn_atomic_one_revision,
    "txn.duplicate-key-refused": txn_duplicate_key_refused,
    "watch.burst-delivers-every-event": watch_burst_delivers_every_event,
    "watch.start-revision-replays": watch_start_revision_replays,
    "watch.prev-kv": watch_prev_kv,
    "lease.grant-put-revoke": lease_grant_put_revoke,
    "lease.keepalive-once": lease_keepalive_once,
    "lock.mutual-exclusion": lock_mutual_exclusion,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="HOST:PORT of an etcd v3 endpoint")
    parser.add_argument("--only", help="run this check alone")
    args = parser.parse_args()
    host, _, port = args.endpoint.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--endpoint must be HOST:PORT, got {args.endpoint!r}")
    if args.only and args.only not in CHECKS:
        parser.error(f"unknown check {args.only!r}; known: {', '.join(CHECKS)}")
    client = etcd3.client(host=host, port=int(port), timeout=STEP_TIMEOUT_S)
    run = f"py-{os.getpid()}-{time.time_ns()}/"
    failed = 0
    for name, check in CHECKS.items():
        if args.only and args.only != name:
            continue
        ok, detail = True, ""
        try:
            check(client, f"{run}{name}/")
        except Exception as e:  # a check's failure is data, not a crash
            text = e.details() if hasattr(e, "details") and callable(e.details) else str(e)
            ok, detail = False, ((text or "").splitlines() or [type(e).__name__])[0]
            failed += 1
        print(json.dumps({"client": "pypi-etcd3", "check": name, "ok": ok, "detail": detail}), flush=True)
    client.close()
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()

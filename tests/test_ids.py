"""Issue 27: ids are minted from a pool of random bytes drawn a few KiB at a time; they stay unique,
and a forked child never mints its parent's next ids. Input items' ids are derived, stable."""

import os

from proxy import ids


def test_minted_ids_are_unique_and_well_formed() -> None:
    made = [ids.message_id() for _ in range(5000)] + [ids.call_id() for _ in range(5000)]
    assert len(set(made)) == len(made)
    assert all(len(m) == len("msg_") + 32 for m in made[:5000])
    assert all(len(c) <= ids.MAX_CALL_ID_LEN for c in made[5000:])


def test_a_forked_child_mints_other_ids_than_its_parent() -> None:
    ids.message_id()  # the pool holds bytes a child must not reuse
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, ids.response_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    os.close(write)
    assert child != ids.response_id()


def test_derived_ids_are_stable_and_distinct() -> None:
    assert ids.derived("msg", "resp_a", 0) == ids.derived("msg", "resp_a", 0)
    assert len({ids.derived("msg", "resp_a", i) for i in range(100)} | {ids.derived("msg", "resp_b", 0)}) == 101

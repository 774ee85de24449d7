"""Issue 27: ids are minted from a pool of random bytes drawn a few KiB at a time; they stay unique,
and a forked child never mints its parent's next ids. Input items' ids are derived, stable. An
exchange id (one per request) is a per-process random prefix and a count."""

import os

from proxy import ids


def test_minted_ids_are_unique_and_well_formed() -> None:
    made = [ids.message_id() for _ in range(5000)] + [ids.call_id() for _ in range(5000)]
    assert len(set(made)) == len(made)
    assert all(len(m) == len("msg_") + 32 for m in made[:5000])
    assert all(len(c) <= ids.MAX_CALL_ID_LEN for c in made[5000:])
    exchanges = [ids.exchange_id(ids.exchange_number()) for _ in range(5000)]
    assert len(set(exchanges)) == 5000 and all(e.startswith("ex_") for e in exchanges)
    numbers = [ids.exchange_number_of(e) for e in exchanges]
    assert [ids.exchange_id(n) for n in numbers] == exchanges  # an id names its number, both ways


def test_only_this_process_exchange_ids_name_a_number() -> None:
    own = ids.exchange_id(ids.exchange_number())
    assert ids.exchange_number_of(own) is not None
    prefix = len("ex_") + 16
    other = "ex_" + ("0" if own[3] != "0" else "1") + own[4:]  # another instance's prefix
    for wrong in (other, own[:prefix] + "0x000001", own[:prefix] + "-0000001", own[:prefix] + " 0000001",
                  own[:prefix] + "1" * 17, own[:prefix], own[:prefix] + "ABCDEF12", "ex_", ""):
        assert ids.exchange_number_of(wrong) is None, wrong


def test_a_forked_child_mints_other_ids_than_its_parent() -> None:
    ids.message_id()  # the pool holds bytes a child must not reuse
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, f"{ids.response_id()} {ids.exchange_id(0)}".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child, child_exchange = os.read(read, 200).decode().split()
    os.close(read)
    os.close(write)
    assert child != ids.response_id()
    prefix = len("ex_") + 16  # the process's own 64 random bits
    assert child_exchange[:prefix] != ids.exchange_id(0)[:prefix]


def test_derived_ids_are_stable_and_distinct() -> None:
    assert ids.derived("msg", "resp_a", 0) == ids.derived("msg", "resp_a", 0)
    assert len({ids.derived("msg", "resp_a", i) for i in range(100)} | {ids.derived("msg", "resp_b", 0)}) == 101

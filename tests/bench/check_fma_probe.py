#!/usr/bin/env python3
"""Checks the FMA peak probe's compiled loops (autoscheduler/MachineProbes.cpp, linked into tessel_bench): in each of
fma_loop_avx2 and fma_loop_avx512, the FMA loop (the backward jump whose body holds the most
FMAs) must hold only register FMAs and the loop's own bookkeeping: no stack
access (a spilled accumulator would make the probe time loads and stores) and exactly as many
FMAs per iteration as the probe counts (chains x unroll).
Usage: check_fma_probe.py OBJDUMP BINARY"""
import re
import subprocess
import sys

EXPECTED_CHAINS = {"fma_loop_avx2": 12, "fma_loop_avx512": 24}


def functions(disassembly):
    """Maps each function name to its instruction lines [(address, text)]."""
    out, name = {}, None
    for line in disassembly.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            name = header.group(1)
            out[name] = []
            continue
        insn = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if name and insn:
            out[name].append((int(insn.group(1), 16), insn.group(2).strip()))
    return out


def loop_body(insns):
    """Instructions of the FMA loop: of the loops (a backward jump and the code from its target
    to it), the one holding the most FMAs."""
    best, best_fmas = None, -1
    for address, text in insns:
        jump = re.match(r"^j[a-z]+\s+([0-9a-f]+)", text)
        if jump and int(jump.group(1), 16) < address:
            target = int(jump.group(1), 16)
            body = [(a, t) for a, t in insns if target <= a <= address]
            fmas = sum(1 for _, t in body if t.startswith("vfmadd"))
            if fmas > best_fmas:
                best, best_fmas = body, fmas
    return best


def main():
    objdump, binary = sys.argv[1], sys.argv[2]
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-C", binary], check=True, capture_output=True,
                          text=True).stdout
    found = 0
    failures = []
    for name, insns in functions(text).items():
        short = next((k for k in EXPECTED_CHAINS if re.search(r"\b%s\b" % k, name)), None)
        if not short:
            continue
        found += 1
        body = loop_body(insns)
        if not body:
            failures.append(f"{short}: no loop found")
            continue
        stack = [t for _, t in body if re.search(r"\((%rsp|%rbp)\)", t)]
        fmas = [t for _, t in body if t.startswith("vfmadd")]
        memory_fmas = [t for t in fmas if "(" in t]
        chains = EXPECTED_CHAINS[short]
        print(f"{short}: loop of {len(body)} instructions, {len(fmas)} FMAs, {len(stack)} stack accesses")
        if stack:
            failures.append(f"{short}: the loop touches the stack (spilled registers): {stack[:3]}")
        if memory_fmas:
            failures.append(f"{short}: FMAs with memory operands: {memory_fmas[:3]}")
        if len(fmas) == 0 or len(fmas) % chains:
            failures.append(f"{short}: {len(fmas)} FMAs per loop iteration, not a multiple of its {chains} chains")
    if found != len(EXPECTED_CHAINS):
        failures.append(f"found {found} of the probe loops {sorted(EXPECTED_CHAINS)} in {binary}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

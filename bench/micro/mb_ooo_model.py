#!/usr/bin/env python3
"""mb_ooo_model: a crude out-of-order timing model of one IFMA kernel function, for machines
without AVX-512 IFMA (where the kernels cannot be timed). A model, not a measurement: use it to
compare two builds of the same function, never as a throughput claim.

    objdump -d --no-show-raw-insn -C \
        build/src/crypto/mb/CMakeFiles/ag_crypto_mb.dir/kernels_ifma.cc.o > ifma.s
    bench/micro/mb_ooo_model.py ifma.s START LOOP_TOP LOOP_BACK END TRIPS

Addresses are hexadecimal, read off the disassembly of one function: the trace is
[START, LOOP_TOP) once, [LOOP_TOP, LOOP_BACK] TRIPS times, then (LOOP_BACK, END]. A function
without a loop: LOOP_TOP = LOOP_BACK = END and TRIPS 0. Scalar instructions are dropped (they
run on the integer side), calls are not followed, memory dependencies are not modelled (every
load is ready 7 cycles after it dispatches).

The machine, roughly a Zen 5 core: vpmadd52luq/huq latency 4 on two pipes; simple vector ops
(add, sub, shifts, logic, compares, blends, broadcasts) latency 1 on four pipes; register moves
and zero idioms eliminated at rename; two 512-bit loads per cycle, latency 7 (a masked merging
load one more); one store per cycle; 8 instructions dispatched per cycle in order into a
scheduler of WINDOW entries; every pipe issues the oldest ready instruction.
"""

import argparse
import re
import sys

MADD_LATENCY = 4
LOAD_LATENCY = 7
MADD_PIPES, ALU_PIPES, LOAD_PORTS, STORE_PORTS = 2, 4, 2, 1
ALU_OPS = {
    'vpaddq', 'vpsubq', 'vpandd', 'vpandq', 'vpandnd', 'vpandnq', 'vpord', 'vporq', 'vpxord',
    'vpxorq', 'vpxor', 'vpsrlq', 'vpsllq', 'vpsraq', 'vpblendmq', 'vpcmpeqq', 'vpcmpq',
    'vpcmpuq', 'vpternlogd', 'vpternlogq', 'vpbroadcastq', 'vptestmq'
}
MOVES = {'vmovdqa64', 'vmovdqu64', 'vmovdqa32', 'vmovdqu32'}
REG = re.compile(r'%([xyz]mm\d+|k\d)')


def trace(path, start, top, back, end, trips):
    lines = []
    for ln in open(path):
        m = re.match(r'^\s*([0-9a-f]+):\s+(.*)$', ln)
        if not m:
            continue
        ins = re.sub(r' <.*', '', m.group(2)).strip()
        if ins.startswith('v') and not ins.startswith('vzeroupper'):
            lines.append((int(m.group(1), 16), ins))
    pro = [i for a, i in lines if start <= a < top]
    body = [i for a, i in lines if top <= a <= back]
    epi = [i for a, i in lines if back < a <= end]
    return pro + body * trips + epi


def operands(rest):
    parts, depth, cur = [], 0, ''
    for ch in rest:
        depth += ch == '('
        depth -= ch == ')'
        if ch == ',' and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def vreg(r):
    return re.sub(r'^[xy]mm', 'zmm', r)


def classify(ins):
    """(kind, source registers, destination register, memory operand?)"""
    mnemonic, _, rest = ins.partition(' ')
    parts = operands(rest)
    has_mem = any('(' in p for p in parts)
    if mnemonic.startswith('vpmadd52'):
        return 'madd', [vreg(r) for p in parts for r in REG.findall(p)], \
            vreg(REG.findall(parts[-1])[0]), has_mem
    if mnemonic in MOVES:
        src, dst = parts
        if '(' in dst:
            return 'store', [vreg(r) for r in REG.findall(src)], None, False
        dregs = REG.findall(dst)
        if '(' in src:
            if '{' in dst:  # merging masked load: depends on the old value and the mask
                return 'mload', [vreg(dregs[0])] + dregs[1:], vreg(dregs[0]), True
            return 'load', [], vreg(dregs[0]), True
        return 'move', [vreg(REG.findall(src)[0])], vreg(dregs[0]), False
    if mnemonic in ALU_OPS:
        regs = [REG.findall(p) for p in parts]
        if mnemonic.startswith('vpxor') and not has_mem and len(set(regs[0] + regs[1])) == 1:
            return 'zero', [], vreg(regs[-1][0]), False
        dst = regs[-1][0]
        srcs = [r for rs in regs[:-1] for r in rs] + regs[-1][1:]
        return 'alu', [r if r.startswith('k') else vreg(r) for r in srcs], \
            dst if dst.startswith('k') else vreg(dst), has_mem
    raise ValueError('unmodelled instruction: ' + ins)


def simulate(instructions, window=96, width=8):
    ops = [classify(i) for i in instructions]
    n = len(ops)
    producer, deps = {}, []
    for i, (kind, srcs, dst, _) in enumerate(ops):
        deps.append([producer.get(s) for s in srcs])
        if kind == 'move':  # eliminated: the destination names the source's producer
            producer[dst] = producer.get(srcs[0])
        elif dst is not None:
            producer[dst] = i
    done = [None] * n
    load_ready = [None] * n
    active, next_op, finished, cycle = [], 0, 0, 0
    while finished < n:
        dispatched = 0
        while next_op < n and dispatched < width and len(active) < window:
            if ops[next_op][0] in ('move', 'zero'):
                done[next_op] = cycle
                finished += 1
            else:
                active.append(next_op)
            next_op += 1
            dispatched += 1
        ports = LOAD_PORTS
        for i in active:
            if ports == 0:
                break
            if ops[i][3] and load_ready[i] is None:
                load_ready[i] = cycle + LOAD_LATENCY
                ports -= 1

        def ready(i):
            if ops[i][3] and (load_ready[i] is None or load_ready[i] > cycle):
                return False
            return all(d is None or (done[d] is not None and done[d] <= cycle) for d in deps[i])

        slots = {'madd': MADD_PIPES, 'alu': ALU_PIPES, 'store': STORE_PORTS}
        issued = []
        for i in active:
            kind = ops[i][0]
            if kind in slots and slots[kind] == 0:
                continue
            if not ready(i):
                continue
            if kind in slots:
                slots[kind] -= 1
            done[i] = cycle + {'madd': MADD_LATENCY, 'alu': 1, 'store': 1, 'load': 0,
                               'mload': 1}[kind]
            if kind == 'load':
                done[i] = load_ready[i]
            issued.append(i)
        for i in issued:
            active.remove(i)
        finished += len(issued)
        cycle += 1
    madds = sum(1 for op in ops if op[0] == 'madd')
    return max(d for d in done if d is not None), madds


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('disassembly')
    p.add_argument('start')
    p.add_argument('loop_top')
    p.add_argument('loop_back')
    p.add_argument('end')
    p.add_argument('trips', type=int)
    p.add_argument('--window', type=int, default=96)
    a = p.parse_args()
    ins = trace(a.disassembly, int(a.start, 16), int(a.loop_top, 16), int(a.loop_back, 16),
                int(a.end, 16), a.trips)
    cycles, madds = simulate(ins, window=a.window)
    print('%d vector instructions, %d multiply-adds, %d cycles: multiply-add pipes %.1f %% busy'
          % (len(ins), madds, cycles, 100.0 * madds / MADD_PIPES / cycles))
    return 0


if __name__ == '__main__':
    sys.exit(main())

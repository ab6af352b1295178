#!/usr/bin/env python3
"""Condensed map of an sm_90a cubin kernel's SASS (this machine has ptxas but no cuobjdump or
nvdisasm): one letter per instruction of interest, in address order, from the opcode field (low
12 bits of the first 64-bit word; read off cuobjdump listings on the GPU machine, CUDA 13.0).
Q QGMMA, A WARPGROUP.ARRIVE / DEPBAR, S STL (spill store), L LDL (spill load), B BRA,
W SYNCS.PHASECHK (mbarrier wait), R SYNCS.ARRIVE, G LDG, T STG, X EXIT, M USETMAXREG.
Shows where ptxas put spills relative to the wgmma loop, e.g.
  nvcc -arch=sm_90a -cubin -O3 -std=c++20 -Isrc -DMOE_HAVE_CUDA=1 -o k.cubin file.cu
  scripts/sassmap.py k.cubin moe_wgmma_f8ws      (filter: part of the kernel's mangled name)
The wgmma serialization to look for (ptxas -v info C7514) shows as A after every Q."""
import struct, sys
OPS = {0x9f3: 'Q', 0x9c5: 'A', 0x387: 'S', 0x983: 'L', 0x947: 'B', 0x5a7: 'W', 0x9a7: 'R',
       0x981: 'G', 0x986: 'T', 0x82d: 'X', 0x9c8: 'M'}
data = open(sys.argv[1], 'rb').read()
shoff, = struct.unpack_from('<Q', data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
secs = []
for i in range(shnum):
    name, typ, flags, addr, off, size = struct.unpack_from('<IIQQQQ', data, shoff + i * shentsize)
    secs.append((name, off, size))
stroff = secs[shstrndx][1]
def nm(o):
    e = data.index(b'\0', stroff + o)
    return data[stroff + o:e].decode()
for name, off, size in secs:
    n = nm(name)
    if not n.startswith('.text.') or (len(sys.argv) > 2 and sys.argv[2] not in n):
        continue
    print(n, size // 16, 'instructions')
    line = []
    for k in range(0, size, 16):
        w, = struct.unpack_from('<Q', data, off + k)
        c = OPS.get(w & 0xfff)
        if c:
            line.append(c)
        if len(line) >= 100:
            print(' ', ''.join(line)); line = []
    print(' ', ''.join(line))

#!/usr/bin/env python3
"""Evidence for a triple fault: does the guest's own memory explain it?

A triple fault whose exception chain began with a page fault (the VMCB's
`exit_int_info` is #PF) means that delivering the #PF and then the #DF faulted too.
Delivering them reads the IDT gate, the GDT descriptor of the gate's selector, the
TSS when the gate has an IST stack, and pushes onto the stack. This reads the dead
domain's memory (kept by `on_reboot = "preserve"`; mapped read-only from dom0),
walks the guest's page tables (CR3 and the paging mode from Xen's VMCB dump, `xl
debug-keys v`) and checks each of those accesses, plus CR2 (the last faulting
address) and RIP. Nothing in the guest runs after a triple fault and these pages are
never granted to a backend, so memory shows the tables the vCPU faulted with. If
they map every address the deliveries touch, with the gates present and within the
IDT's limit, a real CPU could not have triple-faulted there: the fault came from the
emulated nested SVM (QEMU TCG under Xen), not from the guest. If any access is not
mapped, the guest's own state explains the fault.

    pagewalk.py live NAME ELF   walks a running domain's tables to its RIP and checks
                                that the bytes there are the kernel image's (tests
                                this reader on real Xen)
    pagewalk.py self-test       synthetic guests, intact and broken

run.py imports it (read_and_judge). Long mode only: a guest in another paging mode is
"not judged".
"""

import re
import struct
import subprocess
import sys

PAGE = 4096
ADDR = 0x000F_FFFF_FFFF_F000      # bits 12-51 of a paging entry
P, RW, PS = 1, 2, 0x80
EFER_LMA = 0x400
CR0_PG, CR0_WP = 1 << 31, 1 << 16
CR4_PAE = 0x20


class MemError(Exception):
    pass


class Memory:
    """Guest-physical memory, page by page: `page(pfn)` gives 4096 bytes or None."""

    def read(self, gpa, n):
        """n bytes at guest-physical gpa, or None if a page cannot be read."""
        out = b''
        while n > 0:
            page = self.page(gpa // PAGE)
            if page is None:
                return None
            take = min(n, PAGE - gpa % PAGE)
            out += page[gpa % PAGE:gpa % PAGE + take]
            gpa += take
            n -= take
        return out

    def u64(self, gpa):
        b = self.read(gpa, 8)
        return None if b is None else struct.unpack('<Q', b)[0]


class Pages(Memory):
    """A synthetic guest: {pfn: bytes} (the self-test)."""

    def __init__(self, pages):
        self.pages = pages

    def page(self, pfn):
        return self.pages.get(pfn)


class GuestMemory(Memory):
    """A domain's memory, live or kept after its death, mapped read-only a page at a
    time through libxenforeignmemory (what `xl dump-core` uses, without copying the
    rest: a walk needs a dozen pages, and the domain may have a GiB)."""

    def __init__(self, domid):
        import ctypes as c
        self.c = c
        try:
            lib = c.CDLL('libxenforeignmemory.so.1')
        except OSError as e:
            raise MemError('libxenforeignmemory: %s' % e)
        lib.xenforeignmemory_open.restype = c.c_void_p
        lib.xenforeignmemory_open.argtypes = [c.c_void_p, c.c_uint]
        lib.xenforeignmemory_map.restype = c.c_void_p
        lib.xenforeignmemory_map.argtypes = [c.c_void_p, c.c_uint32, c.c_int, c.c_size_t,
                                             c.POINTER(c.c_uint64), c.POINTER(c.c_int)]
        lib.xenforeignmemory_unmap.argtypes = [c.c_void_p, c.c_void_p, c.c_size_t]
        lib.xenforeignmemory_close.argtypes = [c.c_void_p]
        self.lib = lib
        self.handle = lib.xenforeignmemory_open(None, 0)
        if not self.handle:
            raise MemError('xenforeignmemory_open failed')
        self.domid = int(domid)
        self.cache = {}

    def page(self, pfn):
        if pfn not in self.cache:
            c = self.c
            arr = (c.c_uint64 * 1)(pfn)
            err = (c.c_int * 1)(0)
            p = self.lib.xenforeignmemory_map(self.handle, self.domid, 1, 1, arr, err)
            if not p:
                self.cache[pfn] = None
            else:
                self.cache[pfn] = None if err[0] else c.string_at(p, PAGE)
                self.lib.xenforeignmemory_unmap(self.handle, p, 1)
        return self.cache[pfn]

    def close(self):
        self.lib.xenforeignmemory_close(self.handle)


def translate(core, vm, va, write=False):
    """(gpa, None) or (None, why) for a supervisor access to va under the VMCB's
    paging state (long mode: four levels, 1 GiB and 2 MiB pages)."""
    if not vm['efer'] & EFER_LMA:
        raise MemError('not in long mode')
    if va >> 47 not in (0, 0x1ffff):
        return None, 'non-canonical'
    table = vm['cr3'] & ADDR
    wp = vm['cr0'] & CR0_WP
    for level, shift in ((4, 39), (3, 30), (2, 21), (1, 12)):
        at = table + ((va >> shift) & 0x1ff) * 8
        e = core.u64(at)
        if e is None:
            return None, 'level-%d table at 0x%x cannot be read' % (level, table)
        if not e & P:
            return None, 'level-%d entry at 0x%x is 0x%x: not present' % (level, at, e)
        if write and wp and not e & RW:
            return None, 'level-%d entry at 0x%x is 0x%x: read-only' % (level, at, e)
        if level in (3, 2) and e & PS:
            size = 1 << shift
            return (e & ADDR & ~(size - 1)) | (va & (size - 1)), None
        table = e & ADDR
    return table | (va & 0xfff), None


def parse_vmcb(dmesg, domid):
    """The last VMCB dump of domain domid's vCPU 0 in Xen's log, as numbers."""
    blocks = re.split(r'>>> Domain (\d+) <<<', dmesg)
    text = None
    for i in range(1, len(blocks) - 1, 2):
        if int(blocks[i]) == int(domid):
            text = blocks[i + 1]
    if text is None:
        return None
    text = text.split('VCPU 1')[0]
    vm = {}
    for key, rx in (('exit_int_info', r'exit_int_info = (0x[0-9a-f]+|0)\b'),
                    ('efer', r'efer = (0x[0-9a-f]+|0)\b'),
                    ('cr0', r'CR0 = (0x[0-9a-f]+)'), ('cr2', r'CR2 = (0x[0-9a-f]+)'),
                    ('cr3', r'CR3 = (0x[0-9a-f]+)'), ('cr4', r'CR4 = (0x[0-9a-f]+)'),
                    ('rsp', r'RSP = (0x[0-9a-f]+)'), ('rip', r'RIP = (0x[0-9a-f]+)')):
        m = re.search(rx, text)
        if not m:
            return None
        vm[key] = int(m.group(1), 16)
    for key in ('GDTR', 'IDTR', 'TR'):
        m = re.search(r'(?<![A-Z])%s: ([0-9a-f]{4}) ([0-9a-f]{4}) ([0-9a-f]{8}) ([0-9a-f]{16})'
                      % key, text)
        if not m:
            return None
        vm[key.lower()] = (int(m.group(3), 16), int(m.group(4), 16))   # limit, base
    return vm


def judge(core, vm, cr2=True):
    """('intact' | 'explained' | 'not judged', lines). Without `cr2` the faulting
    address is not among the checks (a live guest that has not faulted: its CR2 is
    whatever it was, 0 at boot, and page 0 is unmapped on purpose)."""
    lines = []
    info = vm['exit_int_info']
    valid, kind, vector = info >> 31 & 1, info >> 8 & 7, info & 0xff
    lines.append('exit_int_info 0x%x, CR2 0x%x, RIP 0x%x, RSP 0x%x, CR3 0x%x' % (
        info, vm['cr2'], vm['rip'], vm['rsp'], vm['cr3']))
    if not (valid and kind == 3 and vector == 14):
        return 'not judged', lines + ['the exception chain did not begin with a #PF']
    if not vm['efer'] & EFER_LMA or not vm['cr0'] & CR0_PG:
        return 'not judged', lines + ['the vCPU was not in long mode']
    checks = [('CR2 (the last faulting address)', vm['cr2'], False)] if cr2 else []
    checks += [('RIP', vm['rip'], False), ('the stack below RSP', vm['rsp'] - 8, True)]
    idt_limit, idt_base = vm['idtr']
    gdt_limit, gdt_base = vm['gdtr']
    tr_limit, tr_base = vm['tr']
    gates_ok = True
    for vec in (14, 8):
        if vec * 16 + 15 > idt_limit:
            lines.append('IDT gate %d: beyond the IDT limit 0x%x' % (vec, idt_limit))
            gates_ok = False
            continue
        gpa, why = translate(core, vm, idt_base + vec * 16)
        if gpa is None:
            lines.append('IDT gate %d at 0x%x: %s' % (vec, idt_base + vec * 16, why))
            gates_ok = False
            continue
        g = core.read(gpa, 16)
        lo, sel, ist, attr, mid, hi = struct.unpack_from('<HHBBHI', g)
        handler = lo | mid << 16 | hi << 32
        if not attr & 0x80 or attr & 0x0e != 0x0e:
            lines.append('IDT gate %d: type/attributes 0x%02x, not a present gate' % (
                vec, attr))
            gates_ok = False
            continue
        lines.append('IDT gate %d present: selector 0x%x, IST %d, handler 0x%x' % (
            vec, sel, ist & 7, handler))
        checks.append(('IDT gate %d' % vec, idt_base + vec * 16, False))
        checks.append(('the handler of gate %d' % vec, handler, False))
        if (sel & ~7) + 7 > gdt_limit:
            lines.append('gate %d selector 0x%x: beyond the GDT limit' % (vec, sel))
            gates_ok = False
        else:
            checks.append(('GDT descriptor 0x%x' % sel, gdt_base + (sel & ~7), False))
        if ist & 7:
            at = 0x24 + ((ist & 7) - 1) * 8
            if at + 7 > tr_limit:
                lines.append('gate %d IST %d: beyond the TSS limit' % (vec, ist & 7))
                gates_ok = False
                continue
            gpa, why = translate(core, vm, tr_base + at)
            if gpa is None:
                lines.append('TSS IST %d at 0x%x: %s' % (ist & 7, tr_base + at, why))
                gates_ok = False
                continue
            top = core.u64(gpa)
            checks.append(('the IST %d stack below 0x%x' % (ist & 7, top), top - 8, True))
    ok = gates_ok
    for what, va, write in checks:
        gpa, why = translate(core, vm, va)
        if gpa is not None and write:
            gpa, why = translate(core, vm, va, write=True)
        if gpa is None:
            lines.append('%s 0x%x: %s' % (what, va, why))
            ok = False
        else:
            lines.append('%s 0x%x -> 0x%x: mapped%s' % (what, va, gpa,
                                                         ', writable' if write else ''))
    if ok:
        lines.append('the guest page tables in memory map every address the #PF and '
                     '#DF deliveries touch: its own state cannot triple-fault here')
        return 'intact', lines
    return 'explained', lines


def sh(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, errors='replace', timeout=120)
    return p.returncode, p.stdout


def read_and_judge(domid, dmesg):
    """For run.py: the verdict on domain domid's triple fault from its VMCB dump in
    Xen's log and its memory. Returns (verdict, lines)."""
    vm = parse_vmcb(dmesg, domid)
    if vm is None:
        return 'not judged', ['no VMCB dump of domain %s in Xen\'s log' % domid]
    try:
        mem = GuestMemory(domid)
    except MemError as e:
        return 'not judged', ['the memory cannot be read: %s' % e]
    try:
        return judge(mem, vm)
    except (struct.error, ValueError) as e:
        return 'not judged', ['the memory could not be walked: %s' % e]
    finally:
        mem.close()


def elf_bytes(path, va, n):
    """n bytes of an ELF64 executable's loaded image at virtual address va."""
    with open(path, 'rb') as f:
        d = f.read()
    phoff, = struct.unpack_from('<Q', d, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', d, 0x36)
    for i in range(phnum):
        typ, _fl, off, vaddr, _pa, filesz = struct.unpack_from(
            '<IIQQQQ', d, phoff + i * phentsize)
        if typ == 1 and vaddr <= va and va + n <= vaddr + filesz:
            return d[off + va - vaddr:off + va - vaddr + n]
    return None


def live(name, elf):
    rc, domid = sh(['xl', 'domid', name])
    domid = domid.strip()
    sh(['xl', 'debug-keys', 'v'])
    _, dmesg = sh(['xl', 'dmesg'])
    vm = parse_vmcb(dmesg, domid)
    if vm is None:
        print('pagewalk: no VMCB dump of domain %s' % domid)
        return 1
    mem = GuestMemory(domid)
    try:
        gpa, why = translate(mem, vm, vm['rip'])
        if gpa is None:
            print('pagewalk: RIP 0x%x: %s' % (vm['rip'], why))
            return 1
        got, want = mem.read(gpa, 16), elf_bytes(elf, vm['rip'], 16)
        print('pagewalk: RIP 0x%x -> 0x%x: %s' % (
            vm['rip'], gpa, 'the kernel image\'s bytes'
            if got == want and got else 'bytes %r, image %r' % (got, want)))
        # a live guest's state judged as if it had died of a #PF: its tables are sane
        verdict, lines = judge(mem, dict(vm, exit_int_info=0x80000b0e), cr2=False)
        for ln in lines:
            print('pagewalk: ' + ln)
        print('pagewalk: verdict %s (%d pages read)' % (verdict, len(mem.cache)))
        return 0 if got == want and verdict == 'intact' else 1
    finally:
        mem.close()


def self_test():
    """Builds a guest like Xenlet's (identity map, 4 KiB pages for 2-4 MiB, an IDT
    with IST gates) and checks the verdicts; exits non-zero on a wrong one."""
    pages = {}

    def page(pfn):
        return pages.setdefault(pfn, bytearray(PAGE))

    def put(gpa, fmt, *v):
        struct.pack_into(fmt, page(gpa // PAGE), gpa % PAGE, *v)
    pml4, pdpt, pd, pt = 0x383000, 0x384000, 0x385000, 0x389000
    put(pml4, '<Q', pdpt | 3)
    put(pdpt, '<Q', pd | 3)
    put(pdpt + 8, '<Q', 0x386000 | 3)            # a PD for 1-2 GiB, left out of memory
    for i in range(512):
        put(pd + i * 8, '<Q', (i << 21) | 0x83)
    put(pd + 8, '<Q', pt | 3)
    for i in range(512):
        put(pt + i * 8, '<Q', (0x200000 + i * PAGE) | 3)
    put(pt + 0x18a * 8, '<Q', 0)                 # a guard page at 0x38a000
    idt, gdt, tss = 0x380910, 0x3774c0, 0x377518
    for vec, ist in ((14, 0), (8, 1)):
        h = 0x201000 + vec
        put(idt + vec * 16, '<HHBBHII', h & 0xffff, 8, ist, 0x8e, h >> 16 & 0xffff, 0, 0)
    put(gdt + 8, '<Q', 0x00af9a000000ffff)
    put(tss + 0x24, '<Q', 0x39c000)
    for pfn in (0x201, 0x208, 0x398, 0x39b, 0x39c):
        page(pfn)
    vm = {'exit_int_info': 0x80000b0e, 'efer': 0x1500, 'cr0': 0x80010011,
          'cr2': 0x380990, 'cr3': pml4, 'cr4': 0x20, 'rsp': 0x398928, 'rip': 0x208b3b,
          'gdtr': (0x27, gdt), 'idtr': (0xfff, idt), 'tr': (0x67, tss)}
    failures = []

    def expect(what, want, core, v):
        got, lines = judge(core, v)
        if got != want:
            failures.append('%s: %s, expected %s:\n  %s' % (what, got, want,
                                                           '\n  '.join(lines)))
    core = Pages({p: bytes(b) for p, b in pages.items()})
    expect('intact tables', 'intact', core, vm)
    expect('a chain that began with a #GP', 'not judged', core,
           dict(vm, exit_int_info=0x80000b0d))
    expect('a stack in the guard page', 'explained', core, dict(vm, rsp=0x38a100))
    expect('an IDT limit of 0', 'explained', core, dict(vm, idtr=(0, idt)))
    expect('rip outside memory', 'explained', core, dict(vm, rip=0x7000_0000))
    broken = dict(pages)
    broken[pml4 // PAGE] = bytearray(PAGE)     # the PML4 zeroed: nothing is mapped
    expect('a zeroed PML4', 'explained', Pages({p: bytes(b) for p, b in broken.items()}),
           vm)
    ist_gone = {p: bytes(b) for p, b in pages.items()}
    ist = bytearray(ist_gone[tss // PAGE])
    struct.pack_into('<Q', ist, (tss + 0x24) % PAGE, 0x38b000)   # IST1 top at the guard
    ist_gone[tss // PAGE] = bytes(ist)
    expect('an IST stack over the guard page', 'explained', Pages(ist_gone), vm)
    not_present = {p: bytes(b) for p, b in pages.items()}
    g = bytearray(not_present[idt // PAGE])
    g[(idt + 8 * 16) % PAGE + 5] = 0x0e        # #DF gate not present
    not_present[idt // PAGE] = bytes(g)
    expect('a #DF gate not present', 'explained', Pages(not_present), vm)
    gpa, why = translate(core, vm, 0x4000_0000)     # 1 GiB: PD1, not in this memory
    if gpa is not None or 'cannot be read' not in why:
        failures.append('an address whose tables cannot be read translated: %r' % (
            (gpa, why),))
    sample = ('(XEN) [  678.549787] >>> Domain 8 <<<\n(XEN) [  1] \tVCPU 0\n'
              '(XEN) [  1] exitcode = 0x7f exit_int_info = 0x80000b0e\n'
              '(XEN) [  1] cpl = 0 efer = 0x1500 star = 0 lstar = 0\n'
              '(XEN) [  1] CR0 = 0x0000000080010019 CR2 = 0x0000000000380990\n'
              '(XEN) [  1] CR3 = 0x0000000000383000 CR4 = 0x0000000000000060\n'
              '(XEN) [  1] RSP = 0x0000000000398928  RIP = 0x0000000000208b3b\n'
              '(XEN) [  1] GDTR: 0000 0000 00000027 00000000003774c0\n'
              '(XEN) [  1] IDTR: 0000 0000 00000fff 0000000000380910\n'
              '(XEN) [  1]   TR: 0018 0089 00000067 0000000000377518\n')
    parsed = parse_vmcb(sample, 8)
    if parsed is None or parsed['idtr'] != (0xfff, idt) or parsed['cr2'] != 0x380990 \
            or parsed['tr'] != (0x67, tss) or parsed['gdtr'] != (0x27, gdt) \
            or parsed['exit_int_info'] != 0x80000b0e or parse_vmcb(sample, 9) is not None:
        failures.append('the VMCB dump was misread: %r' % (parsed,))
    for f in failures:
        print('FAIL ' + f)
    print('pagewalk self-test: %d failure(s)' % len(failures))
    return 1 if failures else 0


def main(argv):
    if argv[1:2] == ['self-test']:
        return self_test()
    if argv[1:2] == ['live'] and len(argv) == 4:
        return live(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))

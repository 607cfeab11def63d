//! 32-bit entry points (PVH and multiboot2) and the switch to long mode.
//!
//! Both boot protocols enter in 32-bit flat protected mode with paging off:
//! - PVH (`XEN_ELFNOTE_PHYS32_ENTRY`, xen/include/public/elfnote.h and
//!   xen/include/public/arch-x86/hvm/start_info.h): `%ebx` = physical address of
//!   `hvm_start_info`. QEMU's `-kernel` and Xen's `type="pvh"` use this entry.
//! - multiboot2 (GRUB): `%eax` = 0x36d76289, `%ebx` = physical address of the boot
//!   information structure.
//!
//! The code zeroes `.bss`, identity-maps the first 4 GiB with 2 MiB pages, no-execute
//! (the first 2 MiB in 4 KiB pages, so that the kernel can unmap page 0 after boot as
//! a null guard; the kernel's
//! own 4 MiB (2-6 MiB) in 4 KiB pages, W^X by `linker.ld`'s sections, leaving an unmapped guard
//! page below the boot stack), enables PAE, no-execute and long mode, loads a minimal GDT and calls `xenlet_kernel_entry(kind, info)` on the
//! boot stack. The kernel replaces GDT and IDT with its own right after.
//! Layout as in Mini-OS `arch/x86/x86_hvm.S` (CR4.PAE → EFER.LME → CR0.PG → lgdt →
//! far jump), written for Xenlet.
//!
//! The crate denies unsafe code; this file is its one exception (`global_asm!`): the
//! entry runs before any Rust invariant can hold.
#![allow(unsafe_code)]

/// Boot protocol value passed to the kernel for a PVH boot.
pub const BOOT_KIND_PVH: u32 = 1;
/// Boot protocol value passed to the kernel for a multiboot2 boot.
pub const BOOT_KIND_MULTIBOOT2: u32 = 2;
/// Boot protocol value when the multiboot2 magic was wrong.
pub const BOOT_KIND_UNKNOWN: u32 = 0;

/// Size of the boot stack the kernel runs on.
pub const BOOT_STACK_BYTES: usize = 64 * 1024;

// The entry assembly only makes sense in the bare-metal kernel image; host builds
// (unit tests) leave it out.
#[cfg(target_os = "none")]
core::arch::global_asm!(
    r#"
    .set MB2_MAGIC_HEADER, 0xe85250d6
    .set MB2_MAGIC_LOADER, 0x36d76289
    .set XEN_ELFNOTE_PHYS32_ENTRY, 18

    /* ---- multiboot2 header (multiboot2 spec §3.1) ---- */
    .section .multiboot2, "a"
    .balign 8
xenlet_mb2_header:
    .long MB2_MAGIC_HEADER
    .long 0                                         /* architecture: i386 protected mode */
    .long xenlet_mb2_header_end - xenlet_mb2_header
    .long -(MB2_MAGIC_HEADER + (xenlet_mb2_header_end - xenlet_mb2_header))
    .balign 8                                       /* entry address tag */
    .short 3
    .short 0
    .long 12
    .long xenlet_mb2_start32
    .balign 8                                       /* end tag */
    .short 0
    .short 0
    .long 8
xenlet_mb2_header_end:

    /* ---- PVH entry note (elfnote.h: XEN_ELFNOTE_PHYS32_ENTRY) ---- */
    .section .note.Xen, "a"
    .balign 4
    .long 4                                         /* namesz: "Xen\0" */
    .long 4                                         /* descsz */
    .long XEN_ELFNOTE_PHYS32_ENTRY
    .asciz "Xen"
    .balign 4
    .long xenlet_pvh_start32
    .balign 4

    .section .text.boot, "ax"
    .code32
    .global xenlet_pvh_start32
xenlet_pvh_start32:
    mov $1, %ebp                                    /* BOOT_KIND_PVH; %ebx = hvm_start_info */
    jmp 1f

    .global xenlet_mb2_start32
xenlet_mb2_start32:
    mov $2, %ebp                                    /* BOOT_KIND_MULTIBOOT2; %ebx = info */
    cmp $MB2_MAGIC_LOADER, %eax
    je 1f
    xor %ebp, %ebp                                  /* unknown loader: the kernel says so */

1:  cli
    cld
    mov $xenlet_boot_stack_top, %esp

    /* Zero .bss (page tables and stacks live there). Loaders zero it too, but the
       kernel must not depend on it. */
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    xor %eax, %eax
    rep stosb

    /* Long mode available? CPUID 0x80000001 EDX bit 29. Without it, stop.
       CPUID clobbers %ebx, which holds the boot information address. */
    push %ebx
    mov $0x80000000, %eax
    cpuid
    cmp $0x80000001, %eax
    jb 9f
    mov $0x80000001, %eax
    cpuid
    bt $29, %edx
    jnc 9f
    /* No-execute (CPUID 0x80000001 EDX bit 20): the high dword of every non-code
       entry gets bit 63 from here, and EFER.NXE is set below. */
    bt $20, %edx
    jnc 7f
    movl $0x80000000, xenlet_boot_nx_hi
7:  pop %ebx

    /* Page tables: PML4[0] -> PDPT; PDPT[0..4] -> PD0..PD3; PDn maps 1 GiB with
       2 MiB pages (present | writable | page size). */
    mov $xenlet_boot_pdpt, %eax
    or $0x3, %eax
    mov %eax, xenlet_boot_pml4
    mov $xenlet_boot_pd, %eax
    or $0x3, %eax
    mov $xenlet_boot_pdpt, %edi
    mov $4, %ecx
2:  mov %eax, (%edi)
    add $4096, %eax
    add $8, %edi
    loop 2b
    mov $xenlet_boot_pd, %edi
    xor %eax, %eax                                  /* low 32 bits of the physical address */
    xor %edx, %edx                                  /* entry index 0..2047 */
    mov xenlet_boot_nx_hi, %ecx                     /* no-execute: nothing here is code */
3:  mov %eax, %esi
    or $0x83, %esi
    mov %esi, (%edi,%edx,8)
    mov %ecx, 4(%edi,%edx,8)
    add $0x200000, %eax
    inc %edx
    cmp $2048, %edx
    jne 3b

    /* The first 2 MiB in 4 KiB pages, read-write, no-execute: the kernel unmaps
       page 0 once it has read the boot information (QEMU's PVH loader puts it
       there), so that a null pointer dereference faults and is reported
       (kernel/src/arch/paging.rs). */
    mov $xenlet_boot_pt_low, %edi
    xor %eax, %eax
    xor %edx, %edx
8:  mov %eax, %esi
    or $0x3, %esi
    mov %esi, (%edi,%edx,8)
    mov %ecx, 4(%edi,%edx,8)
    add $4096, %eax
    inc %edx
    cmp $512, %edx
    jne 8b
    mov $xenlet_boot_pt_low, %eax
    or $0x3, %eax
    mov %eax, xenlet_boot_pd                        /* PD0[0] -> the low page table */
    movl $0, xenlet_boot_pd + 4

    /* The kernel's 4 MiB (2-6 MiB, two page tables; the linker script asserts the
       image fits) in 4 KiB pages instead, so the page below the boot stack can stay
       unmapped: an
       overflowing stack faults there (a double fault, reported on its own stack)
       instead of silently writing over whatever lies below it. */
    /* W^X (linker.ld): code read-execute; constants read-only, no-execute; the
       hypercall page (Xen writes it through physical memory) read-execute; data,
       .bss, the stacks and the rest of the 4 MiB read-write, no-execute. CR0.WP makes
       read-only binding for the kernel too. */
    mov $xenlet_boot_pt, %edi
    mov $0x200000, %eax
    xor %edx, %edx
5:  mov %eax, %esi
    or $0x1, %esi                                   /* present */
    mov $0, %ecx                                    /* executable */
    cmp $__text_end, %eax
    jb 6f
    mov xenlet_boot_nx_hi, %ecx                     /* no-execute from here on */
    cmp $__hypercall_start, %eax
    jb 6f                                           /* constants: read-only */
    cmp $__hypercall_end, %eax
    jae 10f
    mov $0, %ecx                                    /* the hypercall page: executable */
    jmp 6f
10: or $0x2, %esi                                   /* data: writable */
6:  mov %esi, (%edi,%edx,8)
    mov %ecx, 4(%edi,%edx,8)
    add $4096, %eax
    inc %edx
    cmp $1024, %edx
    jne 5b
    mov $xenlet_boot_stack_guard, %eax
    sub $0x200000, %eax
    shr $12, %eax
    movl $0, (%edi,%eax,8)                          /* the guard page: not present */
    mov $xenlet_boot_pt, %eax
    or $0x3, %eax
    mov %eax, xenlet_boot_pd + 8                    /* PD0[1] -> the first page table */
    movl $0, xenlet_boot_pd + 12                    /* (executable: its entries decide) */
    add $4096, %eax
    mov %eax, xenlet_boot_pd + 16                   /* PD0[2] -> the second (4-6 MiB) */
    movl $0, xenlet_boot_pd + 20

    mov %cr4, %eax                                  /* CR4.PAE */
    or $(1 << 5), %eax
    mov %eax, %cr4
    mov $xenlet_boot_pml4, %eax
    mov %eax, %cr3
    mov $0xc0000080, %ecx                           /* EFER.LME (and NXE if the CPU has it) */
    rdmsr
    or $(1 << 8), %eax
    cmpl $0, xenlet_boot_nx_hi
    je 11f
    or $(1 << 11), %eax
11: wrmsr
    mov %cr0, %eax                                  /* CR0.PG | CR0.WP | CR0.PE */
    or $((1 << 31) | (1 << 16) | 1), %eax
    mov %eax, %cr0

    lgdt xenlet_boot_gdt_ptr
    ljmp $0x08, $4f

9:  hlt
    jmp 9b

    .code64
4:  mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    xor %eax, %eax
    mov %eax, %fs
    mov %eax, %gs
    mov $xenlet_boot_stack_top, %rsp
    mov %ebp, %edi                                  /* arg 1: boot kind (zero-extends) */
    mov %ebx, %esi                                  /* arg 2: boot information address */
    xor %ebp, %ebp                                  /* end of the frame-pointer chain */
    call xenlet_kernel_entry
6:  cli
    hlt
    jmp 6b

    .section .rodata
    .balign 8
/* Accessed bits set (0x9b, 0x93): the CPU sets them on the first load of a selector
   otherwise, writing into .rodata, which mm/image.rs checks at boot. */
xenlet_boot_gdt:
    .quad 0
    .quad 0x00af9b000000ffff                        /* 0x08: 64-bit code */
    .quad 0x00cf93000000ffff                        /* 0x10: data */
xenlet_boot_gdt_ptr:
    .short xenlet_boot_gdt_ptr - xenlet_boot_gdt - 1
    .long xenlet_boot_gdt

    .section .bss
    .balign 4096
xenlet_boot_pml4: .skip 4096
xenlet_boot_pdpt: .skip 4096
xenlet_boot_pd:   .skip 4 * 4096
xenlet_boot_pt:   .skip 2 * 4096
    .global xenlet_boot_pt_low
xenlet_boot_pt_low: .skip 4096
xenlet_boot_nx_hi: .skip 4096
    .global xenlet_boot_stack_guard
xenlet_boot_stack_guard: .skip 4096
    .global xenlet_boot_stack
xenlet_boot_stack: .skip {stack}
    .global xenlet_boot_stack_top
xenlet_boot_stack_top:
    "#,
    stack = const BOOT_STACK_BYTES,
    options(att_syntax)
);

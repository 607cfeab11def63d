//! The kernel GDT and TSS, with separate stacks for double faults and NMIs so a
//! blown kernel stack still produces a fault report.

use spin::Once;
use x86_64::instructions::segmentation::{Segment, CS, DS, ES, SS};
use x86_64::instructions::tables::load_tss;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use x86_64::structures::tss::TaskStateSegment;
use x86_64::VirtAddr;

/// IST slot (1-based in the IDT, 0-based in the TSS) for #DF.
pub const IST_DOUBLE_FAULT: u8 = 1;
/// IST slot for NMI and machine check.
pub const IST_NMI: u8 = 2;

const IST_STACK_BYTES: usize = 16 * 1024;

#[repr(C, align(16))]
struct IstStack([u8; IST_STACK_BYTES]);

static mut DOUBLE_FAULT_STACK: IstStack = IstStack([0; IST_STACK_BYTES]);
static mut NMI_STACK: IstStack = IstStack([0; IST_STACK_BYTES]);

static TSS: Once<TaskStateSegment> = Once::new();
static GDT: Once<(
    GlobalDescriptorTable,
    SegmentSelector,
    SegmentSelector,
    SegmentSelector,
)> = Once::new();

fn stack_top(stack: *const IstStack) -> VirtAddr {
    VirtAddr::from_ptr(stack) + IST_STACK_BYTES as u64
}

/// Loads the GDT, reloads the segment registers and loads the TSS.
pub fn init() {
    let tss = TSS.call_once(|| {
        let mut tss = TaskStateSegment::new();
        // Only the addresses of the IST stacks are taken; the CPU alone writes them.
        tss.interrupt_stack_table[usize::from(IST_DOUBLE_FAULT - 1)] =
            stack_top(&raw const DOUBLE_FAULT_STACK);
        tss.interrupt_stack_table[usize::from(IST_NMI - 1)] = stack_top(&raw const NMI_STACK);
        tss
    });
    let (gdt, code, data, tss_sel) = GDT.call_once(|| {
        let mut gdt = GlobalDescriptorTable::new();
        let code = gdt.append(Descriptor::kernel_code_segment());
        let data = gdt.append(Descriptor::kernel_data_segment());
        let tss_sel = gdt.append(Descriptor::tss_segment(tss));
        (gdt, code, data, tss_sel)
    });
    gdt.load();
    // SAFETY: the selectors index descriptors of the GDT just loaded, which lives in a static for the life of the kernel; the TSS descriptor points at a static TSS.
    unsafe {
        CS::set_reg(*code);
        DS::set_reg(*data);
        ES::set_reg(*data);
        SS::set_reg(*data);
        load_tss(*tss_sel);
    }
}

/// The kernel code segment selector (for IDT gates).
pub fn code_selector() -> u16 {
    GDT.get().map(|g| g.1 .0).unwrap_or(0x08)
}

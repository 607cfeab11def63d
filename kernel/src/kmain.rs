//! Kernel entry: from the boot stub to the shell prompt.

use crate::arch::{cpu, gdt, pic, trap};
use crate::bootinfo::{self, BootTimes};
use crate::{
    io::console, mm, mm::physmem::IdentityMemory, println, sys::acpi, sys::power, time::clock,
};
use xenlet_boot::entry::{BOOT_KIND_MULTIBOOT2, BOOT_KIND_PVH};
use xenlet_boot::{BootInfo, BootInfoError};

fn parse_boot_info(kind: u32, addr: u32) -> Result<BootInfo, BootInfoError> {
    let mem = IdentityMemory;
    match kind {
        BOOT_KIND_PVH => xenlet_boot::pvh::parse(&mem, u64::from(addr)),
        BOOT_KIND_MULTIBOOT2 => xenlet_boot::multiboot2::parse(&mem, u64::from(addr)),
        _ => Err(BootInfoError::BadMagic(kind)),
    }
}

/// The image's code and constants against the digest `xtask` stamped: a damaged copy
/// (a bad read by the boot loader, memory written behind the kernel's back) stops
/// here, before it runs long enough to write a disk, and Xen sees a crash.
fn check_image() {
    let v = mm::image::check();
    println!("image: {v}");
    if matches!(
        v,
        mm::image::Verdict::OtherLength { .. } | mm::image::Verdict::Damaged { .. }
    ) {
        power::stop_after_fault();
    }
}

fn mib(bytes: u64) -> u64 {
    bytes >> 20
}

/// Before a suspend: every filesystem written back, every disk's requests answered.
fn quiesce_for_suspend() {
    crate::fs::vfs::sync_for_suspend();
    let busy = crate::dev::frontends::quiesce_disks();
    if busy > 0 {
        println!("xenlet: {busy} disk request(s) still unanswered; sent again after a restore");
    }
    // As a driver domain: clients' pages mapped now do not survive a save.
    let (mapped, _) = crate::xen::gnttab::foreign_stats();
    if mapped > 0 {
        println!("netback: {mapped} client page(s) mapped; serving client vifs across a save is not supported");
    }
}

/// In a new domain: the disks and vifs reconnected to their new backends.
fn resume_devices() {
    for line in crate::dev::frontends::resume_disks() {
        println!("blkfront: {line}");
    }
    for line in crate::dev::network::resume_vifs() {
        println!("netfront: {line}");
    }
}

/// Called by boot/src/entry.rs in long mode on the boot stack.
#[no_mangle]
extern "C" fn xenlet_kernel_entry(kind: u32, info_addr: u32) -> ! {
    let entry_tsc = cpu::rdtsc();
    gdt::init();
    trap::init(crate::sys::fault::report_and_stop);
    power::on_xen_shutdown(|| {
        // Client vifs served as a driver domain go Closed too.
        crate::dev::backends::close_untaken();
        crate::dev::frontends::close_all()
    });
    let serial = console::init_serial();
    println!();
    println!("Xenlet {} ({}) starting", crate::VERSION, crate::GIT_REV);
    check_image();
    let clk = clock::init(entry_tsc);
    let early = clock::now();

    let info = match parse_boot_info(kind, info_addr) {
        Ok(mut i) => {
            // A PVH start info without a memory map (version 0, or no entries): ask Xen.
            // `xenlet.memmap=xen` on the command line takes Xen's map regardless (to
            // exercise this path where the loader does give one).
            let force = i
                .cmdline
                .as_str()
                .split_whitespace()
                .any(|w| w == "xenlet.memmap=xen");
            if i.memory.regions().is_empty() || force {
                if let Some(m) = crate::xen::platform::memory_map() {
                    i.memory = m;
                    bootinfo::set_memory_map_from_xen();
                }
            }
            bootinfo::set_boot_info(i)
        }
        Err(e) => {
            println!("xenlet: cannot use the boot information at {info_addr:#x}: {e}");
            power::stop_after_fault();
        }
    };
    let memrep = match mm::heap::init(info) {
        Ok(r) => r,
        Err(_) => {
            println!("xenlet: not enough memory for a heap");
            power::stop_after_fault();
        }
    };
    let memory = clock::now();

    // `xenlet.upcall=percpu`: the per-vCPU upcall vector (through the local APIC, an
    // EOI per upcall) instead of the domain-wide callback vector.
    let per_vcpu_upcall = info
        .cmdline
        .as_str()
        .split_whitespace()
        .any(|w| w == "xenlet.upcall=percpu");
    let xen = match crate::xen::platform::init(per_vcpu_upcall) {
        Ok(x) => x,
        Err(e) => {
            println!("xen: found but unusable: {e}");
            None
        }
    };
    // Interrupts on from here (after the upcall is set up and its state published):
    // XenStore requests and the frontends' handshakes halt until their events.
    pic::init();
    x86_64::instructions::interrupts::enable();
    // Emulated disks/NICs go before any PV device is touched.
    let unplugged = xen.map(|_| crate::xen::unplug::unplug_emulated_devices());
    let grants = xen.map(|_| crate::xen::gnttab::init());
    let xen_done = clock::now();
    // Keyed once the clocks (and Xen's wall clock) run: everything seeded below
    // (the router's hash tables, the stacks, the DNS forwarder) draws from it.
    crate::sys::random::init();
    let xenstore_state = xen.map(|_| {
        crate::xen::xenstore::init()
            .and_then(|port| crate::sys::shutdown::watch_shutdown().map(|()| port))
    });
    let xenstore_done = clock::now();
    let devices = match xenstore_state {
        Some(Ok(_)) => crate::xen::xenbus::enumerate().ok(),
        _ => None,
    };
    let disks = devices.as_deref().map(crate::dev::frontends::connect_disks);
    if devices.is_some() {
        crate::dev::frontends::watch_disks();
        // As a driver domain: client vifs whose backend is this domain.
        let _ = crate::dev::backends::watch_backends();
    }
    let queues = crate::dev::network::queues(info.cmdline.as_str());
    let vifs = devices
        .as_deref()
        .map(|d| crate::dev::frontends::connect_vifs(d, queues));
    // The file tree first: OpenWrt's /etc/config on the root disk configures the
    // network (the root disk, or a tmpfs, /tmp capped at a quarter of the heap, each
    // ext mount's caches at a quarter too).
    let heap_bytes = memrep.heap.len_bytes() as usize;
    let quarter = heap_bytes / 4;
    let root_report = crate::fs::vfs::init(info.cmdline.as_str(), quarter as u64, quarter);
    let vif_names = crate::dev::network::vif_names();
    let vif_names: alloc::vec::Vec<&str> = vif_names
        .iter()
        .map(alloc::string::String::as_str)
        .collect();
    // OpenWrt's first boot: ula_prefix 'auto' becomes this router's own ULA prefix
    if let Some(line) = crate::router::assign_ula() {
        crate::println!("{line}");
    }
    let plan = crate::router::plan(
        info.cmdline.as_str(),
        &vif_names,
        heap_bytes,
        crate::sys::random::u64(),
    );
    // With the router, /etc/config/dhcp's DHCP server and DNS forwarder on the LAN.
    let services = plan
        .as_ref()
        .and_then(|p| crate::router::services(p, heap_bytes));
    let mut net_report = crate::dev::network::init(info.cmdline.as_str(), plan);
    // The firewall's time matches: local time from /etc/config/system (a fixed offset).
    let tz = crate::router::time_zone();
    net_report.extend(tz.note);
    crate::dev::network::set_time_zone(tz.utc_offset_secs);
    if let Some(spec) = services {
        let store = alloc::boxed::Box::new(crate::router::VfsLeaseStore::new(&spec));
        net_report.push(crate::dev::network::start_services(&spec, store));
    }
    // From here every wait in the kernel (a command's disk I/O, `sleep`, XenStore)
    // gives the vifs, the router and the LAN services their turn (`sync::wait`).
    crate::xen::idle::register_service(crate::dev::network::serve);
    let devices_done = clock::now();

    let acpi_root = info.acpi.or_else(|| acpi::scan_for_rsdp(&IdentityMemory));
    // The tables are copied into a scratch buffer of up to 256 KiB, taken fallibly (a
    // small domain's heap may not have it in one piece after the devices: router-small
    // at memory = 8 panicked here), smaller if it must (an HVM DSDT is some 10 KiB).
    let mut scratch: alloc::vec::Vec<u8> = alloc::vec::Vec::new();
    for kib in [256usize, 64, 16] {
        if scratch.try_reserve_exact(kib * 1024).is_ok() {
            scratch.resize(kib * 1024, 0);
            break;
        }
    }
    if scratch.is_empty() {
        println!("acpi: no memory to read the tables; poweroff falls back to halting");
    }
    let power_info = acpi_root
        .filter(|_| !scratch.is_empty())
        .and_then(|r| acpi::power_info(&IdentityMemory, &r, &mut scratch));
    drop(scratch);
    power::set_acpi(power_info);
    // The boot information in low memory has been read (and the ACPI tables): page 0
    // goes, a null pointer dereference faults from here on.
    crate::arch::paging::unmap_page_zero();

    let serial_irq = console::enable_serial_irq();
    let prompt = clock::now();
    let times = bootinfo::set_boot_times(BootTimes {
        early,
        memory,
        xen: xen_done,
        xenstore: xenstore_done,
        devices: devices_done,
        prompt,
    });

    // ---- boot report ----
    let (kstart, kend) = mm::heap::kernel_image();
    println!(
        "boot: {} entry, command line \"{}\"",
        info.protocol,
        info.cmdline.as_str()
    );
    println!(
        "cpu: {}, hypervisor: {}",
        core::str::from_utf8(&cpu::vendor()).unwrap_or("?"),
        cpu::hypervisor_signature()
            .map(|s| alloc::string::String::from_utf8_lossy(&s)
                .trim_end_matches('\0')
                .into())
            .unwrap_or_else(|| alloc::string::String::from("none"))
    );
    println!(
        "memory: {} MiB usable in {} regions; kernel {:#x}-{:#x}; {} MiB in frames; heap {} MiB at {:#x}",
        mib(memrep.usable_bytes),
        info.memory.regions().len(),
        kstart,
        kend,
        mib(memrep.managed_frames * mm::FRAME_BYTES),
        mib(memrep.heap.len_bytes()),
        memrep.heap.addr
    );
    if bootinfo::memory_map_from_xen() {
        println!("memory: map from XENMEM_memory_map (the loader gave none, or xenlet.memmap=xen)");
    }
    if info.memory.dropped() > 0 {
        println!(
            "memory: {} map entries beyond {} ignored",
            info.memory.dropped(),
            xenlet_boot::MemoryMap::CAPACITY
        );
    }
    println!("clock: {} MHz ({})", clk.tsc_hz / 1_000_000, clk.source);
    println!(
        "random: ChaCha20, keyed from {}",
        crate::sys::random::sources()
    );
    match xen {
        Some(x) => println!(
            "xen: Xen {} (CPUID base {:#x}), hypercall page installed, shared info at {:#x}, upcall {}, PV console {}",
            x.version,
            x.cpuid.base,
            x.shared_info.page().addr(),
            match x.callback {
                crate::xen::platform::CallbackMode::PerVcpu(v) => alloc::format!("per-vCPU vector {v:#x}"),
                crate::xen::platform::CallbackMode::Vector(v) => alloc::format!("vector {v:#x}"),
                crate::xen::platform::CallbackMode::Polled => alloc::string::String::from("polled"),
            },
            match crate::xen::platform::console_port() {
                Some(p) => alloc::format!("on event channel {p}"),
                None => alloc::string::String::from("absent"),
            }
        ),
        None => println!("xen: not running on Xen"),
    }
    if clock::is_pvclock() {
        println!(
            "clock: now pvclock (Xen system time; TSC {} MHz per Xen)",
            crate::xen::platform::pvclock_tsc_hz().unwrap_or(0) / 1_000_000
        );
    }
    match grants {
        Some(Ok(s)) => println!("gnttab: v1, {} of {} frames mapped", s.frames, s.max_frames),
        Some(Err(e)) => println!("gnttab: unavailable: {e}"),
        None => {}
    }
    match unplugged {
        Some(crate::xen::unplug::Unplug::Done { version, mask }) => println!(
            "unplug: emulated IDE disks and NICs unplugged (platform device protocol v{version}, mask {mask:#x})"
        ),
        Some(crate::xen::unplug::Unplug::Blacklisted) => {
            println!("unplug: the device model refused this driver build; emulated devices stay")
        }
        Some(crate::xen::unplug::Unplug::NoPlatformDevice) => println!("unplug: no emulated devices (no Xen platform device)"),
        None => {}
    }
    match &xenstore_state {
        Some(Ok(port)) => {
            println!("xenstore: connected on event channel {port}, watching control/shutdown")
        }
        Some(Err(e)) => println!("xenstore: unavailable: {e}"),
        None => {}
    }
    if let Some(devs) = &devices {
        let names: alloc::vec::Vec<alloc::string::String> = devs
            .iter()
            .map(|d| alloc::format!("{} ({})", d.name(), d.path()))
            .collect();
        println!("xenbus: {} PV devices: {}", devs.len(), names.join(", "));
    }
    for line in vifs.iter().flatten() {
        match line {
            Ok(s) => println!("netfront: {s}"),
            Err(e) => println!("netfront: {e}"),
        }
    }
    for line in &net_report {
        println!("net: {line}");
    }
    for line in disks.iter().flatten() {
        match line {
            Ok(s) => println!("blkfront: {s}"),
            Err((name, e)) => println!("blkfront: {name}: {e}"),
        }
    }
    match power_info {
        Some(p) => println!(
            "acpi: PM1a control {:#x}, S5 {}, reset {}",
            p.pm1a_cnt,
            if p.s5.is_some() {
                "found"
            } else {
                "not found (trying SLP_TYP 0)"
            },
            if p.reset.is_some() {
                "register"
            } else {
                "legacy"
            }
        ),
        None => println!("acpi: no tables found; poweroff falls back to halting"),
    }
    println!("root: {root_report}");
    power::on_orderly_shutdown(crate::fs::vfs::shutdown);
    crate::sys::suspend::set_hooks(crate::sys::suspend::Hooks {
        quiesce: quiesce_for_suspend,
        resumed: resume_devices,
    });
    println!(
        "console: com1 {}{}",
        if serial { "16550" } else { "absent" },
        if serial_irq {
            ", receive interrupt on IRQ 4"
        } else {
            ""
        }
    );
    let ms = |i: crate::time::instant::Instant| {
        let us = i.as_micros();
        alloc::format!("{}.{:03}", us / 1000, us % 1000)
    };
    println!(
        "boot time: {} ms from kernel entry to prompt (console+clock {} ms, memory {} ms, xen {} ms, xenstore {} ms, devices {} ms)",
        ms(times.prompt),
        ms(times.early),
        ms(times.memory),
        ms(times.xen),
        ms(times.xenstore),
        ms(times.devices)
    );
    println!("Type 'help' for commands.");
    crate::shell::commands::run_shell()
}

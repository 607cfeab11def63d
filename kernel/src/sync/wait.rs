//! How the kernel waits: one algorithm for every wait, so that no wait starves a
//! service and no wait loses another's wakeup.
//!
//! # The design: a run-to-completion loop whose every wait serves the core
//!
//! The kernel has one vCPU and one flow of control: the shell loop, running one
//! command at a time. A command that waits (a disk request, `sleep`, a XenStore reply,
//! `ping`) waits *here*, and every wait first runs the registered [`Service`] (the data
//! plane: every vif queue, the router, the LAN's DHCP and DNS), then halts until its
//! own deadline or the service's, whichever is first. So the router forwards while the
//! console runs `sleep 15`, a `dd` or a `cp -r`, without threads, stacks per task or an
//! executor; commands that compute without waiting give it a turn ([`Service::run`]) at their
//! check-points (each `dd` block, each hashed MiB).
//!
//! Why not an async executor (embassy's model, as the issue suggested)? It would turn
//! every driver and the filesystem into futures: a rewrite of the blocking APIs that
//! 40 k lines stand on, for one vCPU. The run-to-completion loop gives the property
//! that matters (the data plane runs on its own events and deadlines, whatever the
//! shell is doing) with the code as it is. What it does not give is fairness *inside*
//! the service: a flood of packets is served in bounded batches by the network code
//! itself (its per-poll budgets).
//!
//! Two rules make it safe:
//! - **Readiness is per consumer** ([`EventCount`] and a mark each): a wait halts only if
//!   nothing happened since *its* mark, so a nested wait never consumes the wakeup of
//!   the wait it runs inside (the lost wakeup the single "event seen" flag had).
//! - **The service does not nest** ([`Service::run`] is a no-op while it runs): a wait
//!   inside the service (a lease save's disk write) halts without serving again. The
//!   service only *tries* the locks a command may hold (the stack's), and skips a turn
//!   when one is held: the command that holds it polls the stack itself.
//!
//! For SMP later: each vif queue's state is its own; the service is the one place
//! that would hand a queue's work to the queue's vCPU.
//!
//! Pure logic over a [`Cpu`]: the kernel's is `sti; hlt` on Xen's one-shot timer; the
//! tests' is a fake clock with scripted interrupts.

use crate::sync::eventcount::{EventCount, Seen};
use core::sync::atomic::{AtomicBool, Ordering};

/// What a wait needs of the machine.
pub trait Cpu {
    /// Monotonic nanoseconds.
    fn now_ns(&self) -> u64;
    /// Halts until an interrupt or `deadline_ns` (None: until an interrupt), unless
    /// `busy()` says there is work. `busy` must be checked with interrupts off and the
    /// halt entered atomically with re-enabling them (`sti; hlt`), so an interrupt
    /// after the check ends the halt. May return early.
    fn halt(&self, deadline_ns: Option<u64>, busy: &dyn Fn() -> bool);
}

/// The data plane's turn: polls what is due and returns when it next wants a turn
/// (nanoseconds, None: only on an event).
pub type ServiceFn = fn() -> Option<u64>;

/// The service every wait runs first (registered once, by `kmain`), with the guard
/// that keeps it from nesting.
pub struct Service {
    f: spin::Once<ServiceFn>,
    running: AtomicBool,
    turns: core::sync::atomic::AtomicU64,
}

impl Service {
    /// No service yet.
    pub const fn new() -> Self {
        Service {
            f: spin::Once::new(),
            running: AtomicBool::new(false),
            turns: core::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Sets the service (the first registration wins).
    pub fn register(&self, f: ServiceFn) {
        self.f.call_once(|| f);
    }

    /// Gives the service a turn unless it is already running (a wait inside it);
    /// returns its next deadline.
    pub fn run(&self) -> Option<u64> {
        let f = *self.f.get()?;
        if self.running.swap(true, Ordering::Acquire) {
            return None;
        }
        self.turns.fetch_add(1, Ordering::Relaxed);
        let next = f();
        self.running.store(false, Ordering::Release);
        next
    }

    /// Turns the service has had.
    pub fn turns(&self) -> u64 {
        self.turns.load(Ordering::Relaxed)
    }
}

impl Default for Service {
    fn default() -> Self {
        Self::new()
    }
}

/// One waiting place's state: its mark on the event count.
#[derive(Debug)]
pub struct Waiter {
    seen: Seen,
}

impl Waiter {
    /// A waiter that has seen every event so far. Take it *before* the first check
    /// of the condition waited for.
    pub fn new(events: &EventCount) -> Self {
        Waiter {
            seen: events.mark(),
        }
    }

    /// A waiter that goes on from a mark kept elsewhere (a wait with no state of its
    /// own between calls keeps its mark in a static).
    pub fn resume(seen: Seen) -> Self {
        Waiter { seen }
    }

    /// This waiter's mark, to keep for [`Waiter::resume`].
    pub fn seen(&self) -> Seen {
        self.seen
    }

    /// One wait: runs `service`, then halts until an event newer than this waiter's
    /// mark, `extra_busy()` (queued console input, say), `deadline_ns`, or the service's
    /// own deadline, whichever is first. Returns at once if an event came since the
    /// last return. The caller re-checks its condition after each return.
    pub fn wait(
        &mut self,
        cpu: &impl Cpu,
        events: &EventCount,
        service: &Service,
        deadline_ns: Option<u64>,
        extra_busy: &dyn Fn() -> bool,
    ) {
        let next = service.run();
        let deadline = match (deadline_ns, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let seen = self.seen;
        let due = |now: u64| deadline.is_some_and(|d| now >= d);
        if !due(cpu.now_ns()) {
            cpu.halt(deadline, &|| events.since(&seen) || extra_busy());
        }
        // Whatever came up to here, the caller's next check sees.
        let _ = events.take(&mut self.seen);
    }
}

#[cfg(test)]
mod tests {
    //! The core loop over a fake machine: a clock that halts jump forward, and
    //! interrupts (a packet on a vif, a disk completion) scripted at given times.
    extern crate std;
    use super::*;
    use core::cell::{Cell, RefCell};
    use std::vec::Vec;

    /// A fake CPU: `halt` moves the clock to the next scripted interrupt or the
    /// deadline, whichever is first, and delivers the interrupt (signals its count).
    struct FakeCpu<'a> {
        now: Cell<u64>,
        /// (time, which count) in time order.
        irqs: RefCell<Vec<(u64, &'a EventCount)>>,
        /// Every event bumps this too (the upcall's global count).
        any: &'a EventCount,
        halts: Cell<u32>,
    }

    impl<'a> FakeCpu<'a> {
        fn new(any: &'a EventCount) -> Self {
            FakeCpu {
                now: Cell::new(0),
                irqs: RefCell::new(Vec::new()),
                any,
                halts: Cell::new(0),
            }
        }
        fn irq_at(&self, t: u64, ec: &'a EventCount) {
            let mut v = self.irqs.borrow_mut();
            v.push((t, ec));
            v.sort_by_key(|(t, _)| *t);
        }
        /// Delivers every interrupt due by now.
        fn deliver(&self) -> bool {
            let mut any = false;
            let mut v = self.irqs.borrow_mut();
            while v.first().is_some_and(|(t, _)| *t <= self.now.get()) {
                let (_, ec) = v.remove(0);
                ec.signal();
                self.any.signal();
                any = true;
            }
            any
        }
        /// Computes for `ns` (no halt): interrupts still arrive.
        fn spin(&self, ns: u64) {
            self.now.set(self.now.get() + ns);
            self.deliver();
        }
    }

    impl Cpu for FakeCpu<'_> {
        fn now_ns(&self) -> u64 {
            self.now.get()
        }
        fn halt(&self, deadline: Option<u64>, busy: &dyn Fn() -> bool) {
            if self.deliver() || busy() {
                return;
            }
            self.halts.set(self.halts.get() + 1);
            let next_irq = self.irqs.borrow().first().map(|(t, _)| *t);
            let wake = match (deadline, next_irq) {
                (Some(d), Some(i)) => d.min(i),
                (d, i) => d.or(i).expect("halt with nothing to wake it: hung"),
            };
            self.now.set(wake.max(self.now.get()));
            self.deliver();
        }
    }

    const MS: u64 = 1_000_000;

    std::thread_local! {
        /// This test's vif count (each test thread its own).
        static NET: Cell<Option<&'static EventCount>> = const { Cell::new(None) };
        static NET_SEEN: Cell<Seen> = const { Cell::new(Seen::zero()) };
        static SERVED_AT: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
        static CLOCK: Cell<u64> = const { Cell::new(0) };
    }

    /// A fresh vif count for this test thread, for [`net_service`].
    fn new_vif() -> &'static EventCount {
        let net: &'static EventCount =
            std::boxed::Box::leak(std::boxed::Box::new(EventCount::new()));
        NET.with(|n| n.set(Some(net)));
        net
    }

    /// The fake data plane: serves when its vif's count moved, records when.
    fn net_service() -> Option<u64> {
        let net = NET.with(Cell::get).expect("new_vif first");
        let mut seen = NET_SEEN.with(Cell::get);
        if net.take(&mut seen) {
            SERVED_AT.with(|v| v.borrow_mut().push(CLOCK.with(Cell::get)));
        }
        NET_SEEN.with(|s| s.set(seen));
        None
    }

    /// `sleep` as the shell runs it: wait until `end` on the core.
    fn sleep(cpu: &FakeCpu, any: &EventCount, svc: &Service, end: u64) {
        let mut w = Waiter::new(any);
        while cpu.now_ns() < end {
            CLOCK.with(|c| c.set(cpu.now_ns()));
            w.wait(cpu, any, svc, Some(end), &|| false);
            CLOCK.with(|c| c.set(cpu.now_ns()));
        }
    }

    #[test]
    fn packets_are_served_while_a_command_sleeps() {
        let any = EventCount::new();
        let cpu = FakeCpu::new(&any);
        let svc = Service::new();
        svc.register(net_service);
        let net = new_vif();
        for i in 1..75 {
            cpu.irq_at(i * 200 * MS, net); // a ping every 200 ms until 14.8 s
        }
        sleep(&cpu, &any, &svc, 15_000 * MS);
        let served = SERVED_AT.with(|v| v.borrow().clone());
        assert_eq!(served.len(), 74, "every packet served during the sleep");
        for (i, t) in served.iter().enumerate() {
            let arrived = (i as u64 + 1) * 200 * MS;
            assert!(
                *t <= arrived + MS,
                "packet {i} arrived at {arrived} ns, served at {t} ns"
            );
        }
        assert!(cpu.halts.get() >= 74, "it halted between packets");
    }

    #[test]
    fn an_inner_wait_does_not_take_the_outer_loops_wakeup() {
        // The shell loop marks, checks its sources (nothing), then a command runs
        // whose disk wait sees an event come and goes on: the outer wait must not
        // halt afterwards as though nothing had happened.
        let any = EventCount::new();
        let cpu = FakeCpu::new(&any);
        let svc = Service::new();
        let mut outer = Waiter::new(&any);
        // the command: waits on the disk, during which a vif event arrives
        let vif = EventCount::new();
        let vif: &'static EventCount = std::boxed::Box::leak(std::boxed::Box::new(vif));
        cpu.irq_at(5 * MS, vif);
        let mut inner = Waiter::new(&any);
        inner.wait(&cpu, &any, &svc, Some(10 * MS), &|| false);
        assert_eq!(vif.count(), 1);
        let t = cpu.now_ns();
        // back in the loop: the outer wait returns at once (no halt to its deadline)
        outer.wait(&cpu, &any, &svc, Some(1_000 * MS), &|| false);
        assert_eq!(
            cpu.now_ns(),
            t,
            "the outer loop slept through the vif's event"
        );
    }

    #[test]
    fn a_wait_halts_again_once_it_has_seen_the_event() {
        let any = EventCount::new();
        let cpu = FakeCpu::new(&any);
        let svc = Service::new();
        let mut w = Waiter::new(&any);
        any.signal();
        w.wait(&cpu, &any, &svc, Some(10 * MS), &|| false);
        assert_eq!(cpu.now_ns(), 0, "returned at once for the event");
        w.wait(&cpu, &any, &svc, Some(10 * MS), &|| false);
        assert_eq!(cpu.now_ns(), 10 * MS, "then halted to the deadline");
    }

    #[test]
    fn the_service_deadline_bounds_the_halt() {
        fn wants_5ms() -> Option<u64> {
            Some(5 * MS)
        }
        let any = EventCount::new();
        let cpu = FakeCpu::new(&any);
        let svc = Service::new();
        svc.register(wants_5ms);
        let mut w = Waiter::new(&any);
        w.wait(&cpu, &any, &svc, Some(1_000 * MS), &|| false);
        assert_eq!(cpu.now_ns(), 5 * MS, "woke for the service's timer");
        assert_eq!(svc.turns(), 1);
    }

    #[test]
    fn the_service_does_not_nest() {
        static SVC: Service = Service::new();
        static DEPTH: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
        static MAX: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
        fn svc_that_waits() -> Option<u64> {
            let d = DEPTH.fetch_add(1, Ordering::SeqCst) + 1;
            MAX.fetch_max(d, Ordering::SeqCst);
            // a wait inside the service (a lease save's disk write) serves nothing
            assert_eq!(SVC.run(), None);
            DEPTH.fetch_sub(1, Ordering::SeqCst);
            None
        }
        SVC.register(svc_that_waits);
        assert_eq!(SVC.run(), None);
        assert_eq!(MAX.load(Ordering::SeqCst), 1);
        assert_eq!(SVC.turns(), 1);
    }

    #[test]
    fn queued_input_ends_the_halt() {
        let any = EventCount::new();
        let cpu = FakeCpu::new(&any);
        let svc = Service::new();
        let mut w = Waiter::new(&any);
        w.wait(&cpu, &any, &svc, Some(10 * MS), &|| true);
        assert_eq!(cpu.now_ns(), 0);
        assert_eq!(cpu.halts.get(), 0);
    }

    #[test]
    fn computing_without_waiting_is_served_at_check_points() {
        let any = EventCount::new();
        let cpu = FakeCpu::new(&any);
        let svc = Service::new();
        svc.register(net_service);
        cpu.irq_at(3 * MS, new_vif());
        // a hash of 10 MiB at 1 MiB per ms, a check-point per MiB
        for _ in 0..10 {
            cpu.spin(MS);
            CLOCK.with(|c| c.set(cpu.now_ns()));
            svc.run();
        }
        let served = SERVED_AT.with(|v| v.borrow().clone());
        assert_eq!(
            served,
            [3 * MS],
            "served at the first check-point after it came"
        );
    }
}

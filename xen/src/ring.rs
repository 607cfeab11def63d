//! The split request/response ring of xen/include/public/io/ring.h: the frontend's
//! side ([`FrontRing`]) and the backend's ([`BackRing`]).
//!
//! The shared ring starts with a 64-byte header — `req_prod` @0, `req_event` @4,
//! `rsp_prod` @8, `rsp_event` @12, private/pad to 64 — followed by the entries, a
//! union of request and response, `entry_bytes` each; the entry count is the largest
//! power of two that fits in the ring's pages (`__RING_SIZE`). The methods mirror
//! the macros: `FRONT_RING_INIT`, `RING_PUSH_REQUESTS_AND_CHECK_NOTIFY`,
//! `RING_FINAL_CHECK_FOR_RESPONSES`; a response is copied out of the ring exactly
//! once ([`FrontRing::take_response`]) and the backend's indexes are checked: a
//! response producer that runs ahead of the requests made marks the ring broken.
//!
//! The backend's side mirrors `BACK_RING_ATTACH`, `RING_PUSH_RESPONSES_AND_CHECK_NOTIFY`
//! and `RING_FINAL_CHECK_FOR_REQUESTS` on a page the frontend granted and the backend
//! mapped ([`ForeignPage`]). There the frontend is the untrusted side: a request
//! producer more than a ring ahead of the requests taken marks the ring broken (as
//! Linux's netback does), and no more requests are taken than can be answered
//! (`RING_HAS_UNCONSUMED_REQUESTS`), so a response never overwrites a request not
//! yet taken.

use crate::shared::{DmaPages, ForeignPage};
use core::fmt;
use core::sync::atomic::{fence, Ordering};

const REQ_PROD: usize = 0;
const REQ_EVENT: usize = 4;
const RSP_PROD: usize = 8;
const RSP_EVENT: usize = 12;
/// Offset of the first entry.
pub const HEADER_BYTES: usize = 64;

/// Ring failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// No free slot: wait for responses.
    Full,
    /// The backend's indexes are impossible; the ring must not be used again.
    Corrupt,
    /// An encoded entry does not match the ring's entry size.
    BadEntry,
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RingError::Full => "ring full",
            RingError::Corrupt => "backend corrupted the ring indexes",
            RingError::BadEntry => "entry size mismatch",
        })
    }
}

/// Number of entries of `entry_bytes` in a ring of `ring_bytes` (`__RING_SIZE`).
pub fn ring_entries(ring_bytes: usize, entry_bytes: usize) -> u32 {
    let n = (ring_bytes.saturating_sub(HEADER_BYTES) / entry_bytes.max(1)) as u32;
    if n == 0 {
        0
    } else {
        1 << (31 - n.leading_zeros())
    }
}

/// The frontend's view of one shared ring.
pub struct FrontRing {
    pages: DmaPages,
    entry_bytes: usize,
    size: u32,
    req_prod_pvt: u32,
    rsp_cons: u32,
    broken: bool,
}

impl FrontRing {
    /// Initialises the shared ring in `pages` (`SHARED_RING_INIT` +
    /// `FRONT_RING_INIT`); the ring owns them until [`FrontRing::into_pages`].
    pub fn init(pages: DmaPages, entry_bytes: usize) -> Self {
        let mem = pages.mem();
        mem.zero();
        mem.store_u32(REQ_EVENT, 1);
        mem.store_u32(RSP_EVENT, 1);
        let size = ring_entries(mem.len_bytes(), entry_bytes);
        FrontRing {
            pages,
            entry_bytes,
            size,
            req_prod_pvt: 0,
            rsp_cons: 0,
            broken: false,
        }
    }

    /// The ring's pages (to grant them).
    pub fn pages(&self) -> &DmaPages {
        &self.pages
    }

    /// Gives the ring's pages back (to free them once the backend no longer maps
    /// them).
    pub fn into_pages(self) -> DmaPages {
        self.pages
    }

    /// Entries in the ring.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Requests pushed but not yet answered.
    pub fn in_flight(&self) -> u32 {
        self.req_prod_pvt.wrapping_sub(self.rsp_cons)
    }

    /// Free request slots (`RING_FREE_REQUESTS`).
    pub fn free_requests(&self) -> u32 {
        self.size - self.in_flight()
    }

    /// Whether the backend corrupted the ring.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Marks the ring unusable (a bad response seen by the driver).
    pub fn mark_broken(&mut self) {
        self.broken = true;
    }

    fn slot(&self, idx: u32) -> usize {
        HEADER_BYTES + (idx & (self.size - 1)) as usize * self.entry_bytes
    }

    /// Queues a request (copied into the next slot); not visible until pushed.
    pub fn push_request(&mut self, entry: &[u8]) -> Result<(), RingError> {
        if self.broken {
            return Err(RingError::Corrupt);
        }
        if entry.len() > self.entry_bytes {
            return Err(RingError::BadEntry);
        }
        if self.in_flight() >= self.size {
            return Err(RingError::Full);
        }
        self.pages
            .mem()
            .write_bytes(self.slot(self.req_prod_pvt), entry);
        self.req_prod_pvt = self.req_prod_pvt.wrapping_add(1);
        Ok(())
    }

    /// Publishes queued requests; true if the backend must be notified
    /// (`RING_PUSH_REQUESTS_AND_CHECK_NOTIFY`).
    pub fn push_requests_and_check_notify(&mut self) -> bool {
        let old = self.pages.mem().load_u32(REQ_PROD);
        let new = self.req_prod_pvt;
        fence(Ordering::SeqCst); // requests visible before req_prod (backend reads it first)
        self.pages.mem().store_u32(REQ_PROD, new);
        fence(Ordering::SeqCst); // req_prod visible before we read req_event
        let event = self.pages.mem().load_u32(REQ_EVENT);
        new.wrapping_sub(event) < new.wrapping_sub(old)
    }

    /// Responses the backend has produced that we have not taken, checked.
    fn unconsumed(&mut self) -> Result<u32, RingError> {
        if self.broken {
            return Err(RingError::Corrupt);
        }
        let prod = self.pages.mem().load_u32(RSP_PROD);
        let n = prod.wrapping_sub(self.rsp_cons);
        if n > self.in_flight() {
            // More responses than requests outstanding: a confused or hostile backend.
            self.broken = true;
            return Err(RingError::Corrupt);
        }
        Ok(n)
    }

    /// Copies the next response out of the ring into `buf` (its entry size), once.
    pub fn take_response(&mut self, buf: &mut [u8]) -> Result<bool, RingError> {
        if buf.len() > self.entry_bytes {
            return Err(RingError::BadEntry);
        }
        if self.unconsumed()? == 0 {
            return Ok(false);
        }
        fence(Ordering::SeqCst); // rsp_prod read before the response contents
        self.pages.mem().read_bytes(self.slot(self.rsp_cons), buf);
        self.rsp_cons = self.rsp_cons.wrapping_add(1);
        Ok(true)
    }

    /// The ring index the next [`FrontRing::push_request`] fills.
    pub fn next_request_index(&self) -> u32 {
        self.req_prod_pvt
    }

    /// The ring index of the next response [`FrontRing::take_response`] takes.
    pub fn next_response_index(&self) -> u32 {
        self.rsp_cons
    }

    /// Re-arms the response event; true if responses arrived meanwhile
    /// (`RING_FINAL_CHECK_FOR_RESPONSES`).
    pub fn final_check_for_responses(&mut self) -> Result<bool, RingError> {
        if self.unconsumed()? > 0 {
            return Ok(true);
        }
        self.pages
            .mem()
            .store_u32(RSP_EVENT, self.rsp_cons.wrapping_add(1));
        fence(Ordering::SeqCst);
        Ok(self.unconsumed()? > 0)
    }

    /// Takes the next response into `buf` as [`FrontRing::take_response`] does; when
    /// there is none, re-arms the response event and takes one that arrived meanwhile
    /// (the `RING_FINAL_CHECK_FOR_RESPONSES` loop). `Ok(false)`: none, event armed.
    pub fn take_response_or_arm(&mut self, buf: &mut [u8]) -> Result<bool, RingError> {
        loop {
            if self.take_response(buf)? {
                return Ok(true);
            }
            if !self.final_check_for_responses()? {
                return Ok(false);
            }
        }
    }
}

/// The backend's view of one shared ring, on a page mapped from the frontend.
pub struct BackRing {
    page: ForeignPage,
    entry_bytes: usize,
    size: u32,
    req_cons: u32,
    rsp_prod_pvt: u32,
    broken: bool,
}

impl BackRing {
    /// Attaches to a ring the frontend initialised (`BACK_RING_ATTACH` at index 0,
    /// as a freshly connected frontend's ring is). A page too small for one entry
    /// gives a ring that is broken from the start.
    pub fn attach(page: ForeignPage, entry_bytes: usize) -> Self {
        let size = ring_entries(page.mem().len_bytes(), entry_bytes);
        BackRing {
            page,
            entry_bytes,
            size,
            req_cons: 0,
            rsp_prod_pvt: 0,
            broken: size == 0,
        }
    }

    /// Gives the mapped page back (to unmap it).
    pub fn into_page(self) -> ForeignPage {
        self.page
    }

    /// Entries in the ring.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Whether the frontend corrupted the ring.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Marks the ring unusable (a bad request seen by the driver).
    pub fn mark_broken(&mut self) {
        self.broken = true;
    }

    /// Requests taken and not yet answered.
    pub fn unanswered(&self) -> u32 {
        self.req_cons.wrapping_sub(self.rsp_prod_pvt)
    }

    fn slot(&self, idx: u32) -> usize {
        HEADER_BYTES + (idx & (self.size - 1)) as usize * self.entry_bytes
    }

    /// Requests the frontend has published that may be taken now: no more than can
    /// be answered (`RING_HAS_UNCONSUMED_REQUESTS`). A producer index more than a
    /// ring ahead breaks the ring.
    pub fn unconsumed(&mut self) -> Result<u32, RingError> {
        if self.broken {
            return Err(RingError::Corrupt);
        }
        let prod = self.page.mem().load_u32(REQ_PROD);
        let req = prod.wrapping_sub(self.req_cons);
        if req > self.size {
            self.broken = true;
            return Err(RingError::Corrupt);
        }
        let room = self.size - self.unanswered();
        Ok(req.min(room))
    }

    /// Copies the next request out of the ring into `buf` (its entry size), once;
    /// `Ok(false)` when there is none.
    pub fn take_request(&mut self, buf: &mut [u8]) -> Result<bool, RingError> {
        if buf.len() > self.entry_bytes {
            return Err(RingError::BadEntry);
        }
        if self.unconsumed()? == 0 {
            return Ok(false);
        }
        fence(Ordering::SeqCst); // req_prod read before the request contents
        self.page.mem().read_bytes(self.slot(self.req_cons), buf);
        self.req_cons = self.req_cons.wrapping_add(1);
        Ok(true)
    }

    /// Queues the response to the oldest unanswered request (copied into the next
    /// response slot); not visible until pushed. `Full` when every request taken is
    /// answered already.
    pub fn push_response(&mut self, entry: &[u8]) -> Result<(), RingError> {
        if self.broken {
            return Err(RingError::Corrupt);
        }
        if entry.len() > self.entry_bytes {
            return Err(RingError::BadEntry);
        }
        if self.unanswered() == 0 {
            return Err(RingError::Full);
        }
        self.page
            .mem()
            .write_bytes(self.slot(self.rsp_prod_pvt), entry);
        self.rsp_prod_pvt = self.rsp_prod_pvt.wrapping_add(1);
        Ok(())
    }

    /// Publishes queued responses; true if the frontend must be notified
    /// (`RING_PUSH_RESPONSES_AND_CHECK_NOTIFY`).
    pub fn push_responses_and_check_notify(&mut self) -> bool {
        if self.broken {
            return false;
        }
        let mem = self.page.mem();
        let old = mem.load_u32(RSP_PROD);
        let new = self.rsp_prod_pvt;
        if old == new {
            return false;
        }
        fence(Ordering::SeqCst); // responses visible before rsp_prod
        mem.store_u32(RSP_PROD, new);
        fence(Ordering::SeqCst); // rsp_prod visible before we read rsp_event
        let event = mem.load_u32(RSP_EVENT);
        new.wrapping_sub(event) < new.wrapping_sub(old)
    }

    /// Re-arms the request event; true if requests arrived meanwhile
    /// (`RING_FINAL_CHECK_FOR_REQUESTS`).
    pub fn final_check_for_requests(&mut self) -> Result<bool, RingError> {
        if self.unconsumed()? > 0 {
            return Ok(true);
        }
        self.page
            .mem()
            .store_u32(REQ_EVENT, self.req_cons.wrapping_add(1));
        fence(Ordering::SeqCst);
        Ok(self.unconsumed()? > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::testpage::alias;
    use crate::shared::SharedPage;

    /// A minimal backend working on the same memory.
    struct Back {
        mem: SharedPage,
        req_cons: u32,
        rsp_prod: u32,
        size: u32,
        entry: usize,
    }

    impl Back {
        fn take_request(&mut self) -> Option<u8> {
            if self.req_cons == self.mem.load_u32(REQ_PROD) {
                return None;
            }
            let mut b = [0u8; 1];
            self.mem.read_bytes(
                HEADER_BYTES + (self.req_cons & (self.size - 1)) as usize * self.entry,
                &mut b,
            );
            self.req_cons += 1;
            Some(b[0])
        }
        fn respond(&mut self, v: u8) {
            self.mem.write_bytes(
                HEADER_BYTES + (self.rsp_prod & (self.size - 1)) as usize * self.entry,
                &[v, 0xee],
            );
            self.rsp_prod += 1;
            self.mem.store_u32(RSP_PROD, self.rsp_prod);
        }
    }

    fn view(r: &FrontRing) -> SharedPage {
        alias(r.pages().mem())
    }

    fn pages() -> DmaPages {
        DmaPages::leak_for_test(0x1000, 1).0
    }

    #[test]
    fn sizes_match_ring_h() {
        assert_eq!(ring_entries(4096, 112), 32); // blkif: (4096-64)/112 = 36 -> 32
        assert_eq!(ring_entries(4096, 12), 256); // netif tx
        assert_eq!(ring_entries(4096, 8), 256); // netif rx
        assert_eq!(ring_entries(2 * 4096, 112), 64);
        assert_eq!(ring_entries(16 * 4096, 112), 512);
        assert_eq!(ring_entries(10, 112), 0);
    }

    #[test]
    fn requests_and_responses_round_trip_with_wraparound() {
        let mut r = FrontRing::init(pages(), 112);
        let mut back = Back {
            mem: view(&r),
            req_cons: 0,
            rsp_prod: 0,
            size: 32,
            entry: 112,
        };
        for round in 0u32..5 {
            for i in 0..32u8 {
                r.push_request(&[i]).unwrap();
            }
            assert_eq!(r.push_request(&[0]), Err(RingError::Full));
            let notify = r.push_requests_and_check_notify();
            assert_eq!(
                notify,
                round == 0,
                "req_event stays at 1 after the first push"
            );
            for _ in 0..32 {
                let v = back.take_request().unwrap();
                back.respond(v);
            }
            let mut buf = [0u8; 16];
            for i in 0..32u8 {
                assert!(r.take_response(&mut buf).unwrap());
                assert_eq!(buf[0], i);
            }
            assert!(!r.take_response(&mut buf).unwrap());
            assert!(!r.final_check_for_responses().unwrap());
        }
    }

    #[test]
    fn a_backend_running_ahead_breaks_the_ring() {
        let mut r = FrontRing::init(pages(), 112);
        r.push_request(&[1]).unwrap();
        r.push_requests_and_check_notify();
        // backend claims 5 responses for 1 request
        view(&r).store_u32(RSP_PROD, 5);
        let mut buf = [0u8; 16];
        assert_eq!(r.take_response(&mut buf), Err(RingError::Corrupt));
        assert!(r.is_broken());
        assert_eq!(r.push_request(&[2]), Err(RingError::Corrupt));
        // a wild index far away also breaks it
        let mut r = FrontRing::init(pages(), 112);
        view(&r).store_u32(RSP_PROD, 0x8000_0000);
        assert_eq!(r.final_check_for_responses(), Err(RingError::Corrupt));
    }

    #[test]
    fn oversize_entries_are_refused() {
        let mut r = FrontRing::init(pages(), 16);
        assert_eq!(r.push_request(&[0u8; 17]), Err(RingError::BadEntry));
        let mut big = [0u8; 17];
        assert_eq!(r.take_response(&mut big), Err(RingError::BadEntry));
    }

    fn back(entry: usize) -> (BackRing, SharedPage) {
        let mem = crate::shared::testpage::page();
        let fp = ForeignPage::alias_for_test(&mem, 0x9000, 1);
        (BackRing::attach(fp, entry), mem)
    }

    #[test]
    fn back_ring_takes_requests_and_answers_them_with_wraparound() {
        let (mut b, fe) = back(12);
        assert_eq!(b.size(), 256);
        fe.store_u32(REQ_EVENT, 1);
        fe.store_u32(RSP_EVENT, 1);
        let mut prod = 0u32;
        for round in 0..3u32 {
            for i in 0..200u32 {
                let at = HEADER_BYTES + ((prod & 255) as usize) * 12;
                fe.write_bytes(at, &(round * 1000 + i).to_le_bytes());
                prod += 1;
            }
            fe.store_u32(REQ_PROD, prod);
            let mut buf = [0u8; 12];
            for i in 0..200u32 {
                assert!(b.take_request(&mut buf).unwrap());
                assert_eq!(
                    u32::from_le_bytes(buf[..4].try_into().unwrap()),
                    round * 1000 + i
                );
                b.push_response(&buf[..4]).unwrap();
            }
            assert!(!b.take_request(&mut buf).unwrap());
            assert_eq!(
                b.push_response(&[0; 4]),
                Err(RingError::Full),
                "nothing unanswered"
            );
            // the frontend armed rsp_event just past what it saw: notified
            assert!(b.push_responses_and_check_notify());
            fe.store_u32(RSP_EVENT, prod + 1);
            assert_eq!(fe.load_u32(RSP_PROD), prod);
            assert!(!b.final_check_for_requests().unwrap());
            assert_eq!(
                fe.load_u32(REQ_EVENT),
                prod + 1,
                "re-armed for the next request"
            );
        }
    }

    #[test]
    fn back_ring_notifies_only_a_frontend_that_asked() {
        let (mut b, fe) = back(12);
        let mut buf = [0u8; 12];
        fe.store_u32(REQ_PROD, 4);
        fe.store_u32(RSP_EVENT, 3); // wants an event once the 3rd response is out
        assert!(b.take_request(&mut buf).unwrap());
        b.push_response(&[0; 4]).unwrap();
        assert!(!b.push_responses_and_check_notify(), "1 response: not yet");
        assert!(b.take_request(&mut buf).unwrap());
        assert!(b.take_request(&mut buf).unwrap());
        b.push_response(&[0; 4]).unwrap();
        b.push_response(&[0; 4]).unwrap();
        assert!(b.push_responses_and_check_notify(), "crossed rsp_event");
        assert!(!b.push_responses_and_check_notify(), "nothing new");
    }

    #[test]
    fn back_ring_refuses_a_producer_more_than_a_ring_ahead() {
        let (mut b, fe) = back(12);
        fe.store_u32(REQ_PROD, 257);
        assert_eq!(b.unconsumed(), Err(RingError::Corrupt));
        assert!(b.is_broken());
        let mut buf = [0u8; 12];
        assert_eq!(b.take_request(&mut buf), Err(RingError::Corrupt));
        assert!(!b.push_responses_and_check_notify());
        // exactly a ring's worth is fine
        let (mut b, fe) = back(12);
        fe.store_u32(REQ_PROD, 256);
        assert_eq!(b.unconsumed(), Ok(256));
        // a producer that goes backwards (wraps to "far ahead") breaks it too
        let (mut b, fe) = back(12);
        fe.store_u32(REQ_PROD, 3);
        for _ in 0..3 {
            assert!(b.take_request(&mut buf).unwrap());
        }
        fe.store_u32(REQ_PROD, 1);
        assert_eq!(b.unconsumed(), Err(RingError::Corrupt));
    }

    #[test]
    fn back_ring_takes_no_more_than_it_can_answer() {
        let (mut b, fe) = back(12);
        let mut buf = [0u8; 12];
        fe.store_u32(REQ_PROD, 256);
        for _ in 0..256 {
            assert!(b.take_request(&mut buf).unwrap());
        }
        // the frontend claims 10 more requests though none was answered: they would
        // sit in the slots the answers go to
        fe.store_u32(REQ_PROD, 266);
        assert_eq!(b.unconsumed(), Ok(0));
        assert!(!b.take_request(&mut buf).unwrap());
        for _ in 0..4 {
            b.push_response(&[1, 2, 3, 4]).unwrap();
        }
        assert_eq!(b.unconsumed(), Ok(4));
    }
}

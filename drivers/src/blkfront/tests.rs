use super::*;
use crate::testplatform::FakeXen;
use xenlet_xen::gnttab::Access;
use xenlet_xen::shared::SharedPage;
use xenlet_xen::shared::PAGE_BYTES;

const BE: &str = "/local/domain/0/backend/vbd/5/51712";

/// blkfront's tests run on the shared fake Xen.
type Fake = FakeXen;

impl FakeXen {
    /// A disk (`device/vbd/51712`, 2048 sectors of 512 bytes, flush offered) whose
    /// backend, in InitWait, offers ring pages up to `order`, persistent grants or
    /// not, `indirect` indirect segments (0: none), and connects when the frontend
    /// goes Initialised.
    fn vbd(persistent: bool, indirect: u32, order: u32) -> Self {
        let f = FakeXen::with_device("device/vbd/51712", BE, "3");
        f.next_port.set(7);
        let mut xs = f.xs.borrow_mut();
        xs.insert(format!("{BE}/max-ring-page-order"), format!("{order}"));
        xs.insert(format!("{BE}/sectors"), "2048".into());
        xs.insert(format!("{BE}/info"), "0".into());
        xs.insert(format!("{BE}/sector-size"), "512".into());
        xs.insert(format!("{BE}/feature-flush-cache"), "1".into());
        xs.insert(
            format!("{BE}/feature-persistent"),
            if persistent { "1" } else { "0" }.into(),
        );
        if indirect > 0 {
            xs.insert(
                format!("{BE}/feature-max-indirect-segments"),
                format!("{indirect}"),
            );
        }
        drop(xs);
        f
    }

    /// The backend writes into the page of grant `gref`: only through a
    /// read-write grant, as Xen enforces.
    fn backend_write(&self, gref: u32, data: &[u8]) -> Result<(), &'static str> {
        match self.access.borrow().get(&gref) {
            None => return Err("no such grant"),
            Some(Access::ReadOnly) => return Err("read-only grant"),
            Some(Access::ReadWrite) => {}
        }
        self.page_by_gref(gref).write_bytes(0, data);
        Ok(())
    }

    /// The ring's (first) page.
    fn ring(&self) -> SharedPage {
        let xs = self.xs.borrow();
        let key = ["device/vbd/51712/ring-ref", "device/vbd/51712/ring-ref0"]
            .into_iter()
            .find(|k| xs.contains_key(*k))
            .unwrap();
        drop(xs);
        self.page_of(key)
    }
}

/// The backend: takes every queued request, answers with `answer(id, op)`.
struct Backend {
    ring: SharedPage,
    req_cons: u32,
    rsp_prod: u32,
    size: u32,
}

/// The data segments' and the indirect pages' grant references of the request
/// with `id` still in the ring (read-write requests only).
fn request_grefs(be: &Backend, id: u64) -> (Vec<u32>, Vec<u32>) {
    for i in 0..be.req_cons {
        let off = 64 + (i & (be.size - 1)) as usize * 112;
        let mut e = [0u8; 112];
        be.ring.read_bytes(off, &mut e);
        if u64::from_le_bytes(e[8..16].try_into().unwrap()) != id {
            continue;
        }
        let word = |at: usize| u32::from_le_bytes(e[at..at + 4].try_into().unwrap());
        if e[0] == blkif::OP_INDIRECT {
            let nseg = usize::from(u16::from_le_bytes([e[2], e[3]]));
            let pages = nseg.div_ceil(blkif::SEGMENTS_PER_INDIRECT_PAGE);
            return (Vec::new(), (0..pages).map(|p| word(28 + p * 4)).collect());
        }
        return (
            (0..usize::from(e[1])).map(|k| word(24 + k * 8)).collect(),
            Vec::new(),
        );
    }
    panic!("no request {id}");
}

impl Backend {
    fn requests(&mut self) -> Vec<(u64, u8, u8, u16)> {
        let prod = self.ring.load_u32(0);
        let mut v = Vec::new();
        while self.req_cons != prod {
            let off = 64 + (self.req_cons & (self.size - 1)) as usize * 112;
            let mut e = [0u8; 112];
            self.ring.read_bytes(off, &mut e);
            let id = u64::from_le_bytes(e[8..16].try_into().unwrap());
            let nseg = if e[0] == blkif::OP_INDIRECT {
                u16::from_le_bytes([e[2], e[3]])
            } else {
                u16::from(e[1])
            };
            v.push((id, e[0], e[1], nseg));
            self.req_cons += 1;
        }
        v
    }
    fn respond(&mut self, id: u64, op: u8, status: i16) {
        let off = 64 + (self.rsp_prod & (self.size - 1)) as usize * 112;
        let mut r = [0u8; 16];
        r[0..8].copy_from_slice(&id.to_le_bytes());
        r[8] = op;
        r[10..12].copy_from_slice(&status.to_le_bytes());
        self.ring.write_bytes(off, &r);
        self.rsp_prod += 1;
        self.ring.store_u32(8, self.rsp_prod);
    }
}

fn connect(f: &Fake) -> (Blkfront<&Fake>, Backend) {
    let d = Blkfront::connect(f, 51712, "xvda".into()).unwrap();
    let be = backend(f, &d);
    (d, be)
}

/// A backend serving `d`'s ring, from its start.
fn backend(f: &Fake, d: &Blkfront<&Fake>) -> Backend {
    Backend {
        ring: f.ring(),
        req_cons: 0,
        rsp_prod: 0,
        size: d.info().features.ring_entries,
    }
}

fn write_req(d: &mut Blkfront<&Fake>, tag: u64, sector: u64, pages: usize) -> BlockRequest {
    let bufs = (0..pages).map(|_| d.alloc_buf().unwrap()).collect();
    BlockRequest {
        tag,
        op: BlockOp::Write,
        sector,
        bytes: pages * 4096,
        bufs,
    }
}

/// Submits `req`, which `d` must take.
fn submit(d: &mut Blkfront<&Fake>, req: BlockRequest) {
    d.submit(req).map_err(|(e, _)| e).unwrap();
}

/// Submits `n` one-page requests made by `make` (tag `t` at sector `8t`), kicks,
/// and returns what the backend finds in the ring.
fn queue(
    d: &mut Blkfront<&Fake>,
    be: &mut Backend,
    make: fn(&mut Blkfront<&Fake>, u64, u64, usize) -> BlockRequest,
    n: u64,
) -> Vec<(u64, u8, u8, u16)> {
    for tag in 0..n {
        let req = make(d, tag, tag * 8, 1);
        submit(d, req);
    }
    d.kick();
    be.requests()
}

/// Submits `req`, kicks, and returns what the backend finds in the ring.
fn send(d: &mut Blkfront<&Fake>, be: &mut Backend, req: BlockRequest) -> Vec<(u64, u8, u8, u16)> {
    submit(d, req);
    d.kick();
    be.requests()
}

/// What `d` has completed.
fn poll(d: &mut Blkfront<&Fake>) -> Vec<Completion> {
    let mut out = Vec::new();
    d.poll(&mut out);
    out
}

/// Takes every buffer left in `d`'s pool: none may be the page of `gfn`.
fn assert_never_reused(d: &mut Blkfront<&Fake>, gfn: u64, what: &str) {
    while let Some(b) = d.alloc_buf() {
        assert_ne!(b.page.frame(0).unwrap(), gfn, "{what} reused");
    }
}

/// Connects to `f`, whose handshake must fail with an error naming `word`.
fn handshake_fails(f: &Fake, word: &str) {
    let e = Blkfront::connect(f, 51712, "xvda".into()).err().unwrap();
    assert!(
        matches!(&e, BlockError::Handshake(w) if w.contains(word)),
        "{e:?}"
    );
}

/// What a failed handshake leaves: every ring grant ended, `pages` ring pages
/// freed, `ports` ports closed.
fn assert_gave_back(f: &Fake, pages: usize, ports: usize) {
    assert!(f.grants.borrow().is_empty(), "ring grants ended");
    assert_eq!(f.pages_freed.get(), pages, "the {pages} ring pages freed");
    assert_eq!(f.ports_closed(), ports, "ports closed");
}

/// The frontend went Closing.
fn assert_closing(f: &Fake) {
    assert_eq!(
        f.key("device/vbd/51712/state").as_deref(),
        Some("5"),
        "Closing"
    );
}

#[test]
fn handshake_publishes_ring_and_reads_the_disk() {
    let f = Fake::vbd(true, 0, 0);
    let (d, _) = connect(&f);
    let xs = f.xs.borrow();
    assert!(xs.contains_key("device/vbd/51712/ring-ref"));
    assert_eq!(xs["device/vbd/51712/event-channel"], "7");
    assert_eq!(xs["device/vbd/51712/protocol"], "x86_64-abi");
    assert_eq!(xs["device/vbd/51712/state"], "4");
    // Both handshake waits (InitWait, Connected) watched the backend's state, and
    // each watch was removed afterwards.
    let st = format!("{BE}/state");
    assert_eq!(
        *f.watch_log.borrow(),
        [
            format!("+{st}"),
            format!("-{st}"),
            format!("+{st}"),
            format!("-{st}")
        ]
    );
    let i = d.info();
    assert_eq!((i.sectors, i.sector_size, i.bytes()), (2048, 512, 1 << 20));
    assert!(i.features.persistent && i.features.flush && !i.features.discard);
    assert_eq!(
        (
            i.features.ring_pages,
            i.features.ring_entries,
            i.features.max_segments
        ),
        (1, 32, 11)
    );
}

#[test]
fn multi_page_ring_and_indirect_segments_are_negotiated() {
    let f = Fake::vbd(true, 512, 3);
    let (mut d, mut be) = connect(&f);
    assert_eq!(f.xs.borrow()["device/vbd/51712/ring-page-order"], "3");
    assert!(f.xs.borrow().contains_key("device/vbd/51712/ring-ref7"));
    let ft = d.info().features;
    assert_eq!(
        (
            ft.ring_pages,
            ft.ring_entries,
            ft.max_segments,
            ft.indirect_segments
        ),
        (8, 256, 256, 256)
    );
    // a 1 MiB write goes out as one indirect request of 256 segments
    let req = write_req(&mut d, 1, 0, 256);
    let reqs = send(&mut d, &mut be, req);
    assert_eq!(reqs, vec![(0, blkif::OP_INDIRECT, blkif::OP_WRITE, 256)]);
    be.respond(0, blkif::OP_WRITE, 0);
    let out = poll(&mut d);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].result, Ok(()));
    assert_eq!(out[0].bufs.len(), 256);
}

#[test]
fn a_backend_that_did_not_close_keeps_its_unanswered_grants_for_good() {
    let f = Fake::vbd(false, 0, 0);
    let (mut d, mut be) = connect(&f);
    let req = read_req(&mut d, 1, 0, 2);
    let r = send(&mut d, &mut be, req);
    let (grefs, _) = request_grefs(&be, r[0].0);
    let gfns: Vec<u64> = grefs.iter().map(|g| f.grants.borrow()[g]).collect();
    // the close timed out: the backend may still read the request
    let (_, kept) = d.release_after(String::from("detached"), false);
    for g in &grefs {
        assert!(f.grants.borrow().contains_key(g), "grant {g} ended");
    }
    let freed = f.freed_gfns();
    assert!(gfns.iter().all(|g| !freed.contains(g)), "a page freed");
    assert!(kept >= 2);
}

/// A buffer from outside this disk's pool (another disk's, in a disk-to-disk
/// copy), never granted to this backend.
fn foreign_buf(f: &Fake, fill: u8) -> IoBuf {
    let b = IoBuf {
        page: f.alloc_pages(1).unwrap(),
        grant: None,
    };
    b.write_at(0, &[fill; PAGE_BYTES]);
    b
}

/// Submits a one-page request of a foreign buffer and kicks; returns the
/// backend's view of it: (id, op) and its data grant refs.
fn submit_foreign(
    d: &mut Blkfront<&Fake>,
    be: &mut Backend,
    op: BlockOp,
    sector: u64,
    buf: IoBuf,
) -> ((u64, u8), Vec<u32>) {
    d.submit(BlockRequest {
        tag: 7,
        op,
        sector,
        bytes: PAGE_BYTES,
        bufs: alloc::vec![buf],
    })
    .map_err(|(e, _)| e)
    .unwrap();
    d.kick();
    let r = be.requests();
    let (grefs, _) = request_grefs(be, r[0].0);
    ((r[0].0, r[0].1), grefs)
}

/// What the backend reads through grant `gref`.
fn backend_read(f: &Fake, gref: u32) -> Vec<u8> {
    let page = f.page_by_gref(gref);
    let mut v = alloc::vec![0u8; PAGE_BYTES];
    page.read_bytes(0, &mut v);
    v
}

#[test]
fn a_foreign_write_goes_through_our_persistent_page() {
    // Linux's blkback maps a persistent frontend's grants read-write: a
    // read-only per-request grant of the other disk's page would be refused.
    let f = Fake::vbd(true, 0, 0);
    let (mut d, mut be) = connect(&f);
    let theirs = foreign_buf(&f, 0xab);
    let their_gfn = theirs.page.frame(0).unwrap();
    let ((id, op), grefs) = submit_foreign(&mut d, &mut be, BlockOp::Write, 16, theirs);
    assert_eq!(f.access.borrow()[&grefs[0]], Access::ReadWrite);
    assert!(
        !f.grants.borrow().values().any(|&g| g == their_gfn),
        "the other disk's page is never granted"
    );
    assert!(backend_read(&f, grefs[0]).iter().all(|&x| x == 0xab));
    be.respond(id, op, 0);
    let mut out = poll(&mut d);
    let c = out.pop().unwrap();
    assert!(c.result.is_ok());
    assert_eq!(c.bufs.len(), 1);
    assert_eq!(
        c.bufs[0].page.frame(0),
        Some(their_gfn),
        "their buffer back"
    );
    assert_eq!(d.stats().bounced_pages, 1);
}

#[test]
fn a_foreign_read_is_copied_back_into_the_callers_buffer() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, mut be) = connect(&f);
    let theirs = foreign_buf(&f, 0);
    let ((id, op), grefs) = submit_foreign(&mut d, &mut be, BlockOp::Read, 0, theirs);
    f.backend_write(grefs[0], &[0x5c; PAGE_BYTES]).unwrap();
    be.respond(id, op, 0);
    let mut out = poll(&mut d);
    let c = out.pop().unwrap();
    let mut got = alloc::vec![0u8; PAGE_BYTES];
    c.bufs[0].read_at(0, &mut got);
    assert!(got.iter().all(|&x| x == 0x5c));
}

#[test]
fn persistent_grants_are_made_once_per_buffer() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, mut be) = connect(&f);
    let mut out = Vec::new();
    let mut bufs: Vec<IoBuf> = (0..4).map(|_| d.alloc_buf().unwrap()).collect();
    let grants_before = f.grants.borrow().len();
    for round in 0..10 {
        let req = BlockRequest {
            tag: round,
            op: BlockOp::Write,
            sector: 8 * round,
            bytes: 4 * 4096,
            bufs,
        };
        submit(&mut d, req);
        d.kick();
        for (id, op, _, _) in be.requests() {
            be.respond(id, op, 0);
        }
        d.poll(&mut out);
        bufs = out.pop().unwrap().bufs;
    }
    assert_eq!(
        f.grants.borrow().len(),
        grants_before,
        "no grant per request"
    );
    assert_eq!(d.stats().written_bytes, 10 * 4 * 4096);
}

#[test]
fn without_persistent_grants_each_request_grants_and_ends() {
    let f = Fake::vbd(false, 0, 0);
    let (mut d, mut be) = connect(&f);
    let base = f.grants.borrow().len();
    let req = write_req(&mut d, 1, 0, 3);
    submit(&mut d, req);
    assert_eq!(f.grants.borrow().len(), base + 3);
    d.kick();
    for (id, op, _, _) in be.requests() {
        be.respond(id, op, 0);
    }
    let out = poll(&mut d);
    assert_eq!(out[0].result, Ok(()));
    assert_eq!(f.grants.borrow().len(), base, "grants ended on completion");
}

#[test]
fn bad_requests_are_refused_before_the_ring() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, _) = connect(&f);
    let req = write_req(&mut d, 1, 2047, 1); // 8 sectors from 2047: past the end
    assert_eq!(
        d.submit(req).err().map(|(e, _)| e),
        Some(BlockError::Invalid("beyond the end of the disk"))
    );
    let req = write_req(&mut d, 1, 0, 12); // 12 pages, no indirect
    assert_eq!(
        d.submit(req).err().map(|(e, _)| e),
        Some(BlockError::Invalid("too many buffers for one request"))
    );
    let mut req = write_req(&mut d, 1, 0, 1);
    req.bytes = 100;
    assert!(matches!(
        d.submit(req).err().map(|(e, _)| e),
        Some(BlockError::Invalid(_))
    ));
    let req = BlockRequest {
        tag: 9,
        op: BlockOp::Discard { sectors: 8 },
        sector: 0,
        bytes: 0,
        bufs: Vec::new(),
    };
    assert_eq!(
        d.submit(req).err().map(|(e, _)| e),
        Some(BlockError::NotSupported)
    );
    assert_eq!(d.in_flight(), 0);
}

fn hostile(answer: impl Fn(&mut Backend, u64, u8)) -> (Blkfront<&'static Fake>, Vec<Completion>) {
    let f: &'static Fake = Box::leak(Box::new(Fake::vbd(true, 0, 0)));
    let (mut d, mut be) = connect(f);
    let reqs = queue(&mut d, &mut be, write_req, 3);
    answer(&mut be, reqs[0].0, reqs[0].1);
    let out = poll(&mut d);
    (d, out)
}

#[test]
fn hostile_responses_break_the_disk_and_fail_pending_io() {
    type Answer = fn(&mut Backend, u64, u8);
    let cases: [(&str, Answer); 5] = [
        ("out of range", |b, _, op| b.respond(999, op, 0)),
        ("not in flight", |b, id, op| {
            b.respond(id, op, 0);
            b.respond(id, op, 0);
        }),
        ("operation", |b, id, _| b.respond(id, blkif::OP_READ, 0)),
        ("unknown status", |b, id, op| b.respond(id, op, 77)),
        ("corrupted", |b, _, _| b.ring.store_u32(8, 50)),
    ];
    for (why, answer) in cases {
        let (mut d, out) = hostile(answer);
        let msg = d
            .broken()
            .unwrap_or_else(|| panic!("not broken for {why}"))
            .to_string();
        assert!(msg.contains(why), "{why}: {msg}");
        let failed = out
            .iter()
            .filter(|c| matches!(c.result, Err(BlockError::Broken(_))))
            .count();
        assert!(failed >= 2, "{why}: pending requests failed ({failed})");
        // further I/O is refused, no panic
        let buf = d.alloc_buf().unwrap();
        let req = BlockRequest {
            tag: 5,
            op: BlockOp::Read,
            sector: 0,
            bytes: 4096,
            bufs: vec![buf],
        };
        assert!(matches!(
            d.submit(req).err().map(|(e, _)| e),
            Some(BlockError::Broken(_))
        ));
    }
}

#[test]
fn io_errors_and_unsupported_flush_are_reported_not_fatal() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, mut be) = connect(&f);
    let req = write_req(&mut d, 1, 0, 1);
    submit(&mut d, req);
    d.submit(BlockRequest {
        tag: 2,
        op: BlockOp::Flush,
        sector: 0,
        bytes: 0,
        bufs: Vec::new(),
    })
    .map_err(|(e, _)| e)
    .unwrap();
    d.kick();
    let r = be.requests();
    be.respond(r[0].0, r[0].1, blkif::RSP_ERROR);
    be.respond(r[1].0, r[1].1, blkif::RSP_EOPNOTSUPP);
    let out = poll(&mut d);
    assert_eq!(out[0].result, Err(BlockError::Io));
    assert_eq!(out[1].result, Err(BlockError::NotSupported));
    assert!(d.broken().is_none());
    assert!(
        !d.info().features.flush,
        "flush turned off after EOPNOTSUPP"
    );
}

fn read_req(d: &mut Blkfront<&Fake>, tag: u64, sector: u64, pages: usize) -> BlockRequest {
    let mut r = write_req(d, tag, sector, pages);
    r.op = BlockOp::Read;
    r
}

#[test]
fn the_fake_backend_writes_only_through_read_write_grants() {
    let f = Fake::vbd(false, 0, 0);
    let (mut d, mut be) = connect(&f);
    let req = write_req(&mut d, 1, 0, 1);
    submit(&mut d, req);
    let req = read_req(&mut d, 2, 8, 1);
    let r = send(&mut d, &mut be, req);
    let (w, _) = request_grefs(&be, r[0].0);
    let (rd, _) = request_grefs(&be, r[1].0);
    assert_eq!(f.backend_write(w[0], b"x"), Err("read-only grant"));
    assert_eq!(f.backend_write(rd[0], b"y"), Ok(()));
}

#[test]
fn a_page_the_backend_keeps_mapped_after_answering_is_quarantined() {
    let f = Fake::vbd(false, 0, 0);
    let (mut d, mut be) = connect(&f);
    let req = read_req(&mut d, 1, 0, 2);
    let kept_gfn = req.bufs[1].page.frame(0).unwrap();
    let r = send(&mut d, &mut be, req);
    let (grefs, _) = request_grefs(&be, r[0].0);
    f.backend_write(grefs[0], &[1; 4096]).unwrap();
    f.backend_write(grefs[1], &[2; 4096]).unwrap();
    // it answers, but keeps the second page mapped (it could write it later)
    f.mapped.borrow_mut().insert(grefs[1]);
    be.respond(r[0].0, r[0].1, blkif::RSP_OKAY);
    let mut out = poll(&mut d);
    assert_eq!(out.len(), 1);
    assert!(
        matches!(&out[0].result, Err(BlockError::Broken(w)) if w.contains("still mapped")),
        "{:?}",
        out[0].result
    );
    assert_eq!(out[0].bufs.len(), 1, "the mapped page is not handed back");
    assert_ne!(out[0].bufs[0].page.frame(0).unwrap(), kept_gfn);
    assert!(d.broken().is_some(), "the disk is broken");
    let st = d.stats();
    assert_eq!((st.quarantined_pages, st.leaked_grants), (1, 1));
    assert!(f.grants.borrow().contains_key(&grefs[1]), "its grant stays");
    assert!(
        !f.grants.borrow().contains_key(&grefs[0]),
        "the other ended"
    );
    // the page never comes back, not from the pool either
    for b in out.pop().unwrap().bufs {
        d.free_buf(b);
    }
    assert_never_reused(&mut d, kept_gfn, "quarantined page");
}

#[test]
fn a_mapped_indirect_page_is_quarantined_not_pooled() {
    let f = Fake::vbd(false, 256, 0);
    let (mut d, mut be) = connect(&f);
    let req = read_req(&mut d, 1, 0, 12);
    let r = send(&mut d, &mut be, req);
    let (_, indirect) = request_grefs(&be, r[0].0);
    assert_eq!(indirect.len(), 1);
    let kept_gfn = f.grants.borrow()[&indirect[0]];
    f.mapped.borrow_mut().insert(indirect[0]);
    be.respond(r[0].0, r[0].1, blkif::RSP_OKAY);
    let out = poll(&mut d);
    assert!(matches!(out[0].result, Err(BlockError::Broken(_))));
    assert_eq!(out[0].bufs.len(), 12, "the data pages were unmapped");
    assert_eq!(d.stats().quarantined_pages, 1);
    assert_never_reused(&mut d, kept_gfn, "quarantined indirect page");
}

#[test]
fn a_broken_disk_keeps_the_grants_of_pending_io_until_teardown() {
    // The backend has not answered these requests: it may still consume them,
    // so their grants stay (and their refs are not reused) while it is live.
    let f = Fake::vbd(false, 0, 0);
    let (mut d, mut be) = connect(&f);
    let r = queue(&mut d, &mut be, read_req, 3);
    let (g1, _) = request_grefs(&be, r[1].0);
    let (g2, _) = request_grefs(&be, r[2].0);
    let kept_gfn = f.grants.borrow()[&g1[0]];
    be.respond(999, blkif::OP_READ, 0); // hostile: breaks the disk
    let out = poll(&mut d);
    assert!(d.broken().is_some());
    assert_eq!(out.len(), 3, "every request answered, as failed");
    assert!(out.iter().all(|c| c.result.is_err() && c.bufs.is_empty()));
    assert!(f.grants.borrow().contains_key(&g1[0]), "grant kept");
    assert!(f.grants.borrow().contains_key(&g2[0]), "grant kept");
    // At the teardown (the backend closed) they end; one it still maps is
    // quarantined, its page never freed.
    f.mapped.borrow_mut().insert(g1[0]);
    let (_, kept) = d.release(String::from("detached"));
    assert!(
        !f.grants.borrow().contains_key(&g2[0]),
        "unmapped: grant ended"
    );
    assert!(f.grants.borrow().contains_key(&g1[0]), "mapped: grant kept");
    assert!(kept >= 1);
    assert!(
        !f.freed_gfns().contains(&kept_gfn),
        "the mapped page is not freed"
    );
}

#[test]
fn a_failed_handshake_gives_the_ring_and_port_back() {
    let f = Fake::vbd(false, 0, 2);
    f.xs.borrow_mut()
        .insert(format!("{BE}/sector-size"), "1000".into());
    handshake_fails(&f, "sector-size");
    assert_gave_back(&f, 4, 1);
    assert_closing(&f);
    // a backend that still maps a ring page: its pages stay allocated
    let g = Fake::vbd(false, 0, 0);
    g.xs.borrow_mut()
        .insert(format!("{BE}/sector-size"), "1000".into());
    g.mapped.borrow_mut().insert(8); // the first grant made: the ring's
    assert!(Blkfront::connect(&g, 51712, "xvda".into()).is_err());
    assert_eq!(g.pages_freed.get(), 0);
    assert!(g.grants.borrow().contains_key(&8));
}

#[test]
fn release_fails_pending_io_and_frees_all_but_what_the_backend_maps() {
    // persistent grants: buffers stay granted in the pool until release
    let f = Fake::vbd(true, 0, 1);
    let (mut d, mut be) = connect(&f);
    let r = queue(&mut d, &mut be, read_req, 3);
    let (g1, _) = request_grefs(&be, r[1].0);
    // one request answered, its buffer back in the pool
    be.respond(r[0].0, blkif::OP_READ, 0);
    let mut out = poll(&mut d);
    for c in out.drain(..) {
        for b in c.bufs {
            d.free_buf(b);
        }
    }
    // the backend still maps the second request's page
    f.mapped.borrow_mut().insert(g1[0]);
    let (freed, kept) = d.release(String::from("disk detached"));
    assert_eq!(kept, 1, "the mapped page is kept back");
    // 3 buffer pages were made; 2 are freed, and the 2 ring pages
    assert_eq!((freed, f.pages_freed.get()), (4, 4));
    assert_eq!(f.ports_closed(), 1);
    let grants = f.grants.borrow();
    assert_eq!(
        grants.len(),
        1,
        "every grant ended but the mapped one: {grants:?}"
    );
    assert!(grants.contains_key(&g1[0]));
}

#[test]
fn a_xenstore_write_that_fails_fails_the_handshake_and_gives_everything_back() {
    let f = Fake::vbd(false, 0, 0);
    f.fail_xs("device/vbd/51712/event-channel");
    handshake_fails(&f, "event-channel");
    assert_gave_back(&f, 1, 1);
    assert_closing(&f);
}

#[test]
fn no_event_channel_or_no_memory_fails_the_handshake_and_keeps_nothing() {
    let f = Fake::vbd(false, 0, 2);
    f.evtchn_fails.set(true);
    handshake_fails(&f, "event channel");
    assert_gave_back(&f, 4, 0);
    let g = Fake::vbd(false, 0, 2);
    g.page_limit.set(Some(3));
    handshake_fails(&g, "no memory");
    assert!(g.grants.borrow().is_empty());
    assert_eq!(
        g.key("device/vbd/51712/ring-ref0"),
        None,
        "nothing published"
    );
}

#[test]
fn a_backend_that_never_connects_times_out_and_gets_the_ring_back() {
    let f = Fake::vbd(false, 0, 0);
    f.backend_stalls.set(true);
    handshake_fails(&f, "timed out");
    assert_gave_back(&f, 1, 1);
    assert_closing(&f);
}

#[test]
fn a_backend_lying_in_its_keys_is_refused_or_bounded() {
    let f = Fake::vbd(false, 0, 0);
    f.set("device/vbd/51712/backend-id", "70000");
    handshake_fails(&f, "backend-id");
    // a ring order and an indirect segment count past what is asked for are capped
    let g = Fake::vbd(false, 4096, 9);
    let (d, _) = connect(&g);
    let feat = d.info().features;
    assert_eq!(feat.ring_pages, 1 << MAX_RING_ORDER);
    assert_eq!(feat.indirect_segments, MAX_INDIRECT_SEGMENTS);
    // a disk without a size is refused
    let h = Fake::vbd(false, 0, 0);
    h.xs.borrow_mut().remove(&format!("{BE}/sectors"));
    handshake_fails(&h, "sectors");
}

#[test]
fn after_a_restore_the_disk_reconnects_with_new_grants_and_closes_no_port() {
    for persistent in [true, false] {
        let f = Fake::vbd(persistent, 0, 0);
        let (mut d, mut be) = connect(&f);
        let mut out = Vec::new();
        // A buffer the caller holds across the move, and one request the old
        // backend never answers.
        let held = d.alloc_buf().unwrap();
        let req = write_req(&mut d, 1, 16, 2);
        for b in &req.bufs {
            b.write_at(0, &[0xa7; 16]);
        }
        submit(&mut d, req);
        d.kick();
        assert_eq!(be.requests().len(), 1);
        let old_ring = f.key("device/vbd/51712/ring-ref");
        let old_port = d.port();

        f.restore();
        assert_eq!(
            d.resume().unwrap(),
            1,
            "the unanswered request is sent again"
        );
        d.poll(&mut out);
        assert!(out.is_empty(), "nothing fails: {:?}", out.len());
        assert_eq!(d.in_flight(), 1);
        assert_eq!(f.ports_closed(), 0, "no port of the new domain closed");
        assert_eq!(f.key("device/vbd/51712/state").as_deref(), Some("4"));
        let new_ring = f.key("device/vbd/51712/ring-ref").unwrap();
        assert!(f.grants.borrow().contains_key(&new_ring.parse().unwrap()));
        assert_ne!(d.port(), old_port);
        assert_ne!(Some(new_ring), old_ring);

        // The new backend finds it on its ring: the same write, its data through
        // grants of the new table; its answer completes the caller's request.
        let mut be = backend(&f, &d);
        let again = be.requests();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].1, blkif::OP_WRITE);
        let (data, _) = request_grefs(&be, again[0].0);
        assert_eq!(data.len(), 2);
        for g in &data {
            assert!(
                f.grants.borrow().contains_key(g),
                "persistent: {persistent}"
            );
            assert_eq!(&backend_read(&f, *g)[..16], &[0xa7; 16]);
        }
        be.respond(again[0].0, again[0].1, 0);
        d.poll(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].tag, 1);
        assert_eq!(out[0].result, Ok(()));
        assert_eq!(out[0].bufs.len(), 2, "its buffers come back");
        for b in out.pop().unwrap().bufs {
            d.free_buf(b);
        }

        // The new backend serves a write through buffers granted on the new
        // connection, the held one included (granted anew or bounced).
        let mut bufs = vec![held, d.alloc_buf().unwrap()];
        for b in &bufs {
            b.write_at(0, &[0x5a; 16]);
        }
        let req = BlockRequest {
            tag: 2,
            op: BlockOp::Write,
            sector: 8,
            bytes: 2 * 4096,
            bufs: core::mem::take(&mut bufs),
        };
        let reqs = send(&mut d, &mut be, req);
        assert_eq!(reqs.len(), 1);
        let (data, _) = request_grefs(&be, reqs[0].0);
        for g in &data {
            assert!(
                f.grants.borrow().contains_key(g),
                "every segment names a grant of the new table (persistent: {persistent})"
            );
            assert_eq!(&backend_read(&f, *g)[..16], &[0x5a; 16]);
        }
        be.respond(reqs[0].0, reqs[0].1, 0);
        out.clear();
        d.poll(&mut out);
        assert_eq!(out[0].result, Ok(()));
        // Back in the pool, then out again: on the new connection.
        for b in out.pop().unwrap().bufs {
            d.free_buf(b);
        }
        assert!(d.broken().is_none());
    }
}

#[test]
fn answers_collected_before_a_suspend_go_to_the_next_poll_not_again_to_the_backend() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, mut be) = connect(&f);
    let req = write_req(&mut d, 7, 0, 1);
    let reqs = send(&mut d, &mut be, req);
    be.respond(reqs[0].0, reqs[0].1, 0);
    // the suspend's quiesce takes the answer off the ring and keeps it
    d.collect();
    assert_eq!(d.in_flight(), 0);
    f.restore();
    assert_eq!(
        d.resume().unwrap(),
        0,
        "an answered request is not sent again"
    );
    let mut be = backend(&f, &d);
    assert!(be.requests().is_empty());
    let out = poll(&mut d);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].tag, &out[0].result), (7, &Ok(())));
}

#[test]
fn requests_a_failed_reconnect_cannot_send_again_fail_with_an_io_error() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, mut be) = connect(&f);
    let req = write_req(&mut d, 3, 0, 1);
    send(&mut d, &mut be, req);
    f.restore();
    f.backend_stalls.set(true);
    assert!(d.resume().is_err());
    let out = poll(&mut d);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].tag, &out[0].result), (3, &Err(BlockError::Io)));
    assert_eq!(out[0].bufs.len(), 1, "its buffer comes back");
}

#[test]
fn a_restore_onto_a_disk_of_another_size_breaks_the_disk() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, _be) = connect(&f);
    f.restore();
    f.set(&format!("{BE}/sectors"), "4096");
    assert!(d.resume().is_err());
    assert!(d.broken().unwrap().contains("4096 sectors"));
    let req = write_req(&mut d, 1, 0, 1);
    assert!(matches!(d.submit(req), Err((BlockError::Broken(_), _))));
}

#[test]
fn a_restore_whose_backend_never_comes_breaks_the_disk_and_closes_no_port() {
    let f = Fake::vbd(true, 0, 0);
    let (mut d, _be) = connect(&f);
    f.restore();
    f.backend_stalls.set(true);
    assert!(d.resume().is_err());
    assert!(d
        .broken()
        .unwrap()
        .contains("not reconnected after a restore"));
    // the failed handshake closed the port it took (the new domain's first); the
    // teardown closes no number of the old domain's
    assert_eq!(*f.closed.borrow(), [1]);
    let _ = d.release(String::from("gone"));
    assert_eq!(*f.closed.borrow(), [1]);
}

/// The slot table of an idle disk is a pointer per ring slot: a 512-slot ring
/// (order 4) takes little more heap than a 32-slot one (order 0) besides its pages
/// (each slot held a whole request's state, 144 bytes, 72 KiB a disk: at memory = 8
/// the two disks' tables were a sixth of router-small's heap).
#[test]
fn an_idle_ring_slot_takes_a_pointer_of_heap() {
    let heap_of = |order| {
        let f = Fake::vbd(true, 0, order);
        let before = xenlet_testalloc::live();
        let d = Blkfront::connect(&f, 51712, "xvda".into()).unwrap();
        let bytes = xenlet_testalloc::live() - before;
        let entries = d.info().features.ring_entries as isize;
        // the ring's pages, which the fake takes from the same heap
        (entries, bytes - (1isize << order) * PAGE_BYTES as isize)
    };
    let (small, small_bytes) = heap_of(0);
    let (large, large_bytes) = heap_of(4);
    assert_eq!((small, large), (32, 512));
    let per_slot = (large_bytes - small_bytes) / (large - small);
    assert!(
        per_slot <= 32,
        "{per_slot} bytes of heap per idle ring slot"
    );
}

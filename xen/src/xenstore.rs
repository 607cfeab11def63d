//! XenStore client over the shared ring (xen/include/public/io/xs_wire.h).
//!
//! The ring page holds `req[1024]`, `rsp[1024]` and four free-running u32 indexes
//! (req_cons @2048, req_prod @2052, rsp_cons @2056, rsp_prod @2060). Messages are a
//! 16-byte `xsd_sockmsg` header (type, req_id, tx_id, len) and `len` payload bytes.
//! Replies are matched to requests by `req_id`; `XS_WATCH_EVENT`s may arrive between
//! them and are queued. xenstored is trusted more than a backend, but its replies are
//! still checked: lengths, ids, NUL-separated lists, error names.

use crate::shared::SharedPage;
use alloc::collections::VecDeque;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{fence, Ordering};

/// Message types (`enum xsd_sockmsg_type`).
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MsgType {
    Directory = 1,
    Read = 2,
    GetPerms = 3,
    Watch = 4,
    Unwatch = 5,
    TransactionStart = 6,
    TransactionEnd = 7,
    GetDomainPath = 10,
    Write = 11,
    Mkdir = 12,
    Rm = 13,
    SetPerms = 14,
    WatchEvent = 15,
    Error = 16,
    /// `XS_DIRECTORY_PART` (`XS_RESET_WATCHES` + 1): a listing in pieces, for
    /// directories whose `XS_DIRECTORY` reply would exceed [`PAYLOAD_MAX`].
    DirectoryPart = 22,
}

/// `XENSTORE_PAYLOAD_MAX`.
pub const PAYLOAD_MAX: usize = 4096;
const HEADER_BYTES: usize = 16;
const RING_BYTES: u32 = 1024;
const REQ: usize = 0;
const RSP: usize = 1024;
const REQ_CONS: usize = 2048;
const REQ_PROD: usize = 2052;
const RSP_CONS: usize = 2056;
const RSP_PROD: usize = 2060;

/// A XenStore failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XsError {
    /// xenstored answered with an error name (`ENOENT`, `EACCES`, `EAGAIN`, …).
    Remote(String),
    /// A reply broke the protocol (length, type, encoding).
    Protocol(&'static str),
    /// The request or its payload is too large for the protocol.
    TooBig,
    /// No reply in time.
    Timeout,
    /// The ring indexes are corrupt; the connection is unusable.
    Broken,
}

impl XsError {
    /// True for xenstored's `ENOENT`.
    pub fn is_enoent(&self) -> bool {
        matches!(self, XsError::Remote(e) if e == "ENOENT")
    }
    /// True for `EAGAIN` (a transaction to retry).
    pub fn is_eagain(&self) -> bool {
        matches!(self, XsError::Remote(e) if e == "EAGAIN")
    }
}

impl fmt::Display for XsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XsError::Remote(e) => f.write_str(e),
            XsError::Protocol(what) => write!(f, "protocol error: {what}"),
            XsError::TooBig => f.write_str("request too large"),
            XsError::Timeout => f.write_str("no reply from xenstored"),
            XsError::Broken => f.write_str("ring corrupt; XenStore unusable"),
        }
    }
}

/// A decoded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Raw type number.
    pub kind: u32,
    /// Request id it answers.
    pub req_id: u32,
    /// Transaction id.
    pub tx_id: u32,
    /// Payload.
    pub payload: Vec<u8>,
}

/// Encodes a request: header plus the parts, each followed by NUL except where the
/// protocol wants the last one bare (`XS_WRITE`'s value).
pub fn encode(
    kind: MsgType,
    req_id: u32,
    tx_id: u32,
    parts: &[&[u8]],
    nul_last: bool,
) -> Result<Vec<u8>, XsError> {
    let mut payload = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        payload.extend_from_slice(p);
        if i + 1 < parts.len() || nul_last {
            payload.push(0);
        }
    }
    if payload.len() > PAYLOAD_MAX {
        return Err(XsError::TooBig);
    }
    let mut m = Vec::with_capacity(HEADER_BYTES + payload.len());
    m.extend_from_slice(&(kind as u32).to_le_bytes());
    m.extend_from_slice(&req_id.to_le_bytes());
    m.extend_from_slice(&tx_id.to_le_bytes());
    m.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    m.extend_from_slice(&payload);
    Ok(m)
}

/// Incremental decoder for the reply stream.
#[derive(Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// Adds received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Takes the next complete message, if any; a header announcing more than
    /// `PAYLOAD_MAX` bytes is a protocol error.
    pub fn next_message(&mut self) -> Result<Option<Message>, XsError> {
        if self.buf.len() < HEADER_BYTES {
            return Ok(None);
        }
        let word = |i: usize| {
            u32::from_le_bytes([
                self.buf[i],
                self.buf[i + 1],
                self.buf[i + 2],
                self.buf[i + 3],
            ])
        };
        let (kind, req_id, tx_id, len) = (word(0), word(4), word(8), word(12) as usize);
        if len > PAYLOAD_MAX {
            return Err(XsError::Protocol("reply longer than XENSTORE_PAYLOAD_MAX"));
        }
        if self.buf.len() < HEADER_BYTES + len {
            return Ok(None);
        }
        let payload = self.buf[HEADER_BYTES..HEADER_BYTES + len].to_vec();
        self.buf.drain(..HEADER_BYTES + len);
        Ok(Some(Message {
            kind,
            req_id,
            tx_id,
            payload,
        }))
    }
}

/// Payload as text, without one trailing NUL.
pub fn text(payload: &[u8]) -> Result<String, XsError> {
    let p = payload.strip_suffix(&[0]).unwrap_or(payload);
    core::str::from_utf8(p)
        .map(ToString::to_string)
        .map_err(|_| XsError::Protocol("reply is not UTF-8"))
}

/// A NUL-separated list (`XS_DIRECTORY`, watch events).
pub fn list(payload: &[u8]) -> Result<Vec<String>, XsError> {
    if payload.is_empty() {
        return Ok(Vec::new());
    }
    let p = payload.strip_suffix(&[0]).unwrap_or(payload);
    p.split(|&b| b == 0)
        .map(|s| {
            core::str::from_utf8(s)
                .map(ToString::to_string)
                .map_err(|_| XsError::Protocol("list entry is not UTF-8"))
        })
        .collect()
}

/// Checks a path before it is sent: non-empty, printable, no NUL, bounded.
pub fn check_path(path: &str) -> Result<(), XsError> {
    if path.is_empty() || path.len() > 3072 || path.bytes().any(|b| !(0x21..0x7f).contains(&b)) {
        return Err(XsError::Protocol("invalid path"));
    }
    Ok(())
}

/// One watch event: the path that changed and the watch's token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// Path that changed.
    pub path: String,
    /// Token given to `watch`.
    pub token: String,
}

/// How a request waits for xenstored: the event channel and the clock.
pub trait Transport {
    /// Notifies xenstored (the store's event channel).
    fn notify(&mut self);
    /// Waits a moment for xenstored; `Err(XsError::Timeout)` once the request has
    /// waited too long.
    fn wait(&mut self) -> Result<(), XsError>;
}

/// `XS_DIRECTORY_PART` requests one listing may take before it is given up (each
/// returns at least one name, or the listing is over).
const DIRECTORY_PART_MAX_REQUESTS: usize = 4096;
/// Restarts of a listing whose directory changed (generation count) under it.
const DIRECTORY_PART_MAX_RESTARTS: usize = 8;

/// One `XS_DIRECTORY_PART` reply, as xenstored's `send_directory_part` writes it:
/// the generation count and a NUL, then whole NUL-terminated names, then one more
/// NUL when the list is complete. Returns (generation, names' bytes, last).
fn directory_part_reply(p: &[u8]) -> Result<(&[u8], &[u8], bool), XsError> {
    let nul = p
        .iter()
        .position(|&b| b == 0)
        .ok_or(XsError::Protocol("directory part without a generation"))?;
    let (gen, rest) = (&p[..nul], &p[nul + 1..]);
    if rest.last() != Some(&0) {
        return Err(XsError::Protocol("directory part not NUL-terminated"));
    }
    let last = rest.len() == 1 || rest.ends_with(&[0, 0]);
    let names = if last { &rest[..rest.len() - 1] } else { rest };
    Ok((gen, names, last))
}

/// The XenStore ring and the protocol state above it.
pub struct Ring {
    page: SharedPage,
    decoder: Decoder,
    next_id: u32,
    events: VecDeque<WatchEvent>,
    broken: bool,
}

impl Ring {
    /// Wraps the page at `HVM_PARAM_STORE_PFN`.
    pub fn new(page: SharedPage) -> Self {
        Ring {
            page,
            decoder: Decoder::default(),
            next_id: 1,
            events: VecDeque::new(),
            broken: false,
        }
    }

    /// Writes as much of `bytes` as fits in the request ring; returns bytes written.
    pub fn write_some(&mut self, bytes: &[u8]) -> Result<usize, XsError> {
        if self.broken {
            return Err(XsError::Broken);
        }
        let cons = self.page.load_u32(REQ_CONS);
        let prod = self.page.load_u32(REQ_PROD);
        let used = prod.wrapping_sub(cons);
        if used > RING_BYTES {
            self.broken = true;
            return Err(XsError::Broken);
        }
        let n = bytes.len().min((RING_BYTES - used) as usize);
        for (i, b) in bytes[..n].iter().enumerate() {
            let idx = (prod.wrapping_add(i as u32) % RING_BYTES) as usize;
            self.page.write_bytes(REQ + idx, core::slice::from_ref(b));
        }
        fence(Ordering::SeqCst); // data before req_prod (pairs with xenstored's read)
        self.page.store_u32(REQ_PROD, prod.wrapping_add(n as u32));
        Ok(n)
    }

    /// Reads what xenstored has produced; returns bytes read.
    pub fn read_some(&mut self) -> Result<usize, XsError> {
        if self.broken {
            return Err(XsError::Broken);
        }
        let prod = self.page.load_u32(RSP_PROD);
        let cons = self.page.load_u32(RSP_CONS);
        let avail = prod.wrapping_sub(cons);
        if avail > RING_BYTES {
            self.broken = true;
            return Err(XsError::Broken);
        }
        fence(Ordering::SeqCst); // rsp_prod before data
        let mut tmp = [0u8; RING_BYTES as usize];
        for i in 0..avail {
            let idx = (cons.wrapping_add(i) % RING_BYTES) as usize;
            self.page
                .read_bytes(RSP + idx, &mut tmp[i as usize..i as usize + 1]);
        }
        fence(Ordering::SeqCst); // data before rsp_cons
        self.page.store_u32(RSP_CONS, prod);
        self.decoder.push(&tmp[..avail as usize]);
        Ok(avail as usize)
    }

    /// Reads what xenstored has produced and, when anything was consumed, calls
    /// `notify`: xenstored goes on writing a reply longer than the free space only
    /// when told there is room (Linux's `xb_read` notifies after moving `rsp_cons`).
    pub fn read_and_notify(&mut self, notify: impl FnOnce()) -> Result<usize, XsError> {
        let n = self.read_some()?;
        if n > 0 {
            notify();
        }
        Ok(n)
    }

    /// Sends a request and waits for its reply (queueing watch events meanwhile).
    pub fn request(
        &mut self,
        kind: MsgType,
        tx: u32,
        parts: &[&[u8]],
        nul_last: bool,
        t: &mut impl Transport,
    ) -> Result<Message, XsError> {
        let id = self.alloc_id();
        let msg = encode(kind, id, tx, parts, nul_last)?;
        let mut sent = 0;
        loop {
            if sent < msg.len() {
                let n = self.write_some(&msg[sent..])?;
                sent += n;
                if n > 0 {
                    t.notify();
                }
            }
            self.read_and_notify(|| t.notify())?;
            if sent == msg.len() {
                if let Some(reply) = self.take_reply(id)? {
                    return Ok(reply);
                }
            }
            t.wait()?;
        }
    }

    /// The children of `path` (inside transaction `tx`, 0 for none): `XS_DIRECTORY`,
    /// and when its answer would be longer than one message (`E2BIG`), the listing
    /// in pieces with `XS_DIRECTORY_PART`, started again when the directory changes
    /// under it (its generation count), as Linux's xenbus does.
    pub fn directory(
        &mut self,
        tx: u32,
        path: &str,
        t: &mut impl Transport,
    ) -> Result<Vec<String>, XsError> {
        check_path(path)?;
        match self.request(MsgType::Directory, tx, &[path.as_bytes()], true, t) {
            Ok(m) => list(&m.payload),
            Err(XsError::Remote(e)) if e == "E2BIG" => self.directory_parts(tx, path, t),
            Err(e) => Err(e),
        }
    }

    fn directory_parts(
        &mut self,
        tx: u32,
        path: &str,
        t: &mut impl Transport,
    ) -> Result<Vec<String>, XsError> {
        'restart: for _ in 0..DIRECTORY_PART_MAX_RESTARTS {
            let mut names: Vec<u8> = Vec::new();
            let mut first_gen: Option<Vec<u8>> = None;
            for _ in 0..DIRECTORY_PART_MAX_REQUESTS {
                let off = alloc::format!("{}", names.len());
                let m = self.request(
                    MsgType::DirectoryPart,
                    tx,
                    &[path.as_bytes(), off.as_bytes()],
                    true,
                    t,
                )?;
                let (gen, part, last) = directory_part_reply(&m.payload)?;
                match &first_gen {
                    None => first_gen = Some(gen.to_vec()),
                    Some(g) if g.as_slice() != gen => continue 'restart,
                    Some(_) => {}
                }
                if !last && part.is_empty() {
                    return Err(XsError::Protocol("directory part without names"));
                }
                names.extend_from_slice(part);
                if last {
                    return list(&names);
                }
            }
            return Err(XsError::Protocol("directory listing does not end"));
        }
        Err(XsError::Remote("EAGAIN".into()))
    }

    /// A fresh request id.
    pub fn alloc_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    /// Decodes received messages: watch events are queued; the reply to `req_id`
    /// is returned when present. Replies to other ids (stale) are dropped.
    pub fn take_reply(&mut self, req_id: u32) -> Result<Option<Message>, XsError> {
        while let Some(m) = self
            .decoder
            .next_message()
            .inspect_err(|_| self.broken = true)?
        {
            if m.kind == MsgType::WatchEvent as u32 {
                let parts = list(&m.payload)?;
                if let [path, token, ..] = parts.as_slice() {
                    self.events.push_back(WatchEvent {
                        path: path.clone(),
                        token: token.clone(),
                    });
                }
                continue;
            }
            if m.req_id == req_id {
                if m.kind == MsgType::Error as u32 {
                    return Err(XsError::Remote(text(&m.payload)?));
                }
                return Ok(Some(m));
            }
        }
        Ok(None)
    }

    /// The next queued watch event.
    pub fn pop_event(&mut self) -> Option<WatchEvent> {
        self.events.pop_front()
    }

    /// Removes the queued events of watch `token` and returns how many there were;
    /// other watches' events stay queued, in order.
    pub fn take_events_for(&mut self, token: &str) -> usize {
        let before = self.events.len();
        self.events.retain(|e| e.token != token);
        before - self.events.len()
    }

    /// Whether the ring was found corrupt.
    pub fn is_broken(&self) -> bool {
        self.broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::testpage::page;

    /// Plays xenstored: reads requests from the ring, writes scripted replies.
    fn serve(r: &Ring, reply: &[u8]) -> Vec<u8> {
        let p = &r.page;
        let (cons, prod) = (p.load_u32(REQ_CONS), p.load_u32(REQ_PROD));
        let mut req = Vec::new();
        for i in cons..prod {
            let mut b = [0u8];
            p.read_bytes(REQ + (i % RING_BYTES) as usize, &mut b);
            req.push(b[0]);
        }
        p.store_u32(REQ_CONS, prod);
        let rp = p.load_u32(RSP_PROD);
        for (i, b) in reply.iter().enumerate() {
            p.write_bytes(RSP + ((rp + i as u32) % RING_BYTES) as usize, &[*b]);
        }
        p.store_u32(RSP_PROD, rp + reply.len() as u32);
        req
    }

    fn msg(kind: u32, id: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        for w in [kind, id, 0, payload.len() as u32] {
            m.extend(w.to_le_bytes());
        }
        m.extend(payload);
        m
    }

    #[test]
    fn encodes_requests_like_xs_wire() {
        let m = encode(MsgType::Write, 7, 3, &[b"data/x", b"1"], false).unwrap();
        assert_eq!(&m[..16], &[11, 0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0]);
        assert_eq!(&m[16..], b"data/x\x001");
        let m = encode(MsgType::Read, 1, 0, &[b"name"], true).unwrap();
        assert_eq!(&m[16..], b"name\0");
        assert_eq!(
            encode(MsgType::Write, 1, 0, &[&[b'a'; 5000]], false),
            Err(XsError::TooBig)
        );
    }

    #[test]
    fn round_trip_with_interleaved_watch_event() {
        let mut r = Ring::new(page());
        let id = r.alloc_id();
        let req = encode(MsgType::Read, id, 0, &[b"name"], true).unwrap();
        assert_eq!(r.write_some(&req).unwrap(), req.len());
        let mut reply = msg(15, 0, b"control/shutdown\0tok\0");
        reply.extend(msg(2, id, b"xenlet-pvh"));
        assert_eq!(serve(&r, &reply), req);
        r.read_some().unwrap();
        let m = r.take_reply(id).unwrap().unwrap();
        assert_eq!(text(&m.payload).unwrap(), "xenlet-pvh");
        assert_eq!(
            r.pop_event(),
            Some(WatchEvent {
                path: "control/shutdown".into(),
                token: "tok".into()
            })
        );
        assert_eq!(r.pop_event(), None);
    }

    #[test]
    fn one_watch_events_are_taken_and_the_others_stay_in_order() {
        let mut r = Ring::new(page());
        let mut events = Vec::new();
        for (path, tok) in [("a", "fe"), ("b", "other"), ("a", "fe"), ("c", "last")] {
            events.extend(msg(15, 0, alloc::format!("{path}\0{tok}\0").as_bytes()));
        }
        serve(&r, &events);
        r.read_some().unwrap();
        assert_eq!(r.take_reply(0).unwrap(), None);
        assert_eq!(r.take_events_for("fe"), 2);
        assert_eq!(r.take_events_for("fe"), 0);
        assert_eq!(r.pop_event().unwrap().token, "other");
        assert_eq!(r.pop_event().unwrap().token, "last");
        assert_eq!(r.pop_event(), None);
    }

    #[test]
    fn errors_are_named_and_replies_split_across_reads_are_joined() {
        let mut r = Ring::new(page());
        let id = r.alloc_id();
        r.write_some(&encode(MsgType::Read, id, 0, &[b"nope"], true).unwrap())
            .unwrap();
        let reply = msg(16, id, b"ENOENT\0");
        serve(&r, &reply[..10]);
        r.read_some().unwrap();
        assert_eq!(
            r.take_reply(id).unwrap(),
            None,
            "half a header is not a message"
        );
        serve(&r, &reply[10..]);
        r.read_some().unwrap();
        let e = r.take_reply(id).unwrap_err();
        assert!(e.is_enoent(), "{e}");
    }

    #[test]
    fn hostile_replies_mark_the_ring_broken() {
        let mut r = Ring::new(page());
        let id = r.alloc_id();
        let mut bad = msg(2, id, b"");
        bad[12..16].copy_from_slice(&100_000u32.to_le_bytes());
        serve(&r, &bad);
        r.read_some().unwrap();
        assert!(matches!(r.take_reply(id), Err(XsError::Protocol(_))));
        assert!(r.is_broken());
        // corrupt indexes
        let mut r = Ring::new(page());
        r.page.store_u32(RSP_PROD, 5000);
        assert_eq!(r.read_some(), Err(XsError::Broken));
        assert_eq!(r.write_some(b"x"), Err(XsError::Broken));
    }

    #[test]
    fn lists_and_paths() {
        assert_eq!(list(b"a\0bb\0c\0").unwrap(), ["a", "bb", "c"]);
        assert!(list(b"").unwrap().is_empty());
        assert!(list(b"\xff\0").is_err());
        assert!(check_path("device/vbd/768/state").is_ok());
        assert!(check_path("").is_err());
        assert!(check_path("a b").is_err());
        assert!(check_path("a\0b").is_err());
    }

    #[test]
    fn full_request_ring_writes_partially() {
        let mut r = Ring::new(page());
        assert_eq!(r.write_some(&[1u8; 1500]).unwrap(), 1024);
        assert_eq!(r.write_some(&[1u8; 10]).unwrap(), 0);
        serve(&r, b"");
        assert_eq!(r.write_some(&[1u8; 10]).unwrap(), 10);
    }

    /// Plays xenstored as the real one behaves: it looks at the rings only when
    /// notified, takes whole requests, and writes as much of its pending replies as
    /// fits; the rest waits for the next notification. It answers `XS_READ` of
    /// "long" with `long_value`, and `XS_DIRECTORY`/`XS_DIRECTORY_PART` of "dir"
    /// with `children` as cxenstored's `send_directory_part` does.
    struct FakeXenstored {
        page: SharedPage,
        inbuf: Vec<u8>,
        out: VecDeque<u8>,
        long_value: Vec<u8>,
        children: Vec<String>,
        gen: u64,
        /// Change the directory (and its generation) after this many part requests.
        change_after_parts: Option<usize>,
        parts_served: usize,
        /// A hostile xenstored: every part is empty and never the last.
        empty_parts: bool,
        notified: usize,
        waits: usize,
    }

    impl FakeXenstored {
        fn new(r: &Ring) -> Self {
            FakeXenstored {
                page: crate::shared::testpage::alias(&r.page),
                inbuf: Vec::new(),
                out: VecDeque::new(),
                long_value: Vec::new(),
                children: Vec::new(),
                gen: 7,
                change_after_parts: None,
                parts_served: 0,
                empty_parts: false,
                notified: 0,
                waits: 0,
            }
        }

        fn answer(&mut self, kind: u32, id: u32, payload: &[u8]) {
            let reply = match kind {
                2 => msg(2, id, &self.long_value.clone()),
                1 => {
                    let mut l = Vec::new();
                    for c in &self.children {
                        l.extend(c.as_bytes());
                        l.push(0);
                    }
                    if l.len() > PAYLOAD_MAX {
                        msg(16, id, b"E2BIG\0")
                    } else {
                        msg(1, id, &l)
                    }
                }
                22 => {
                    self.parts_served += 1;
                    if self.change_after_parts == Some(self.parts_served - 1) {
                        self.children.push("added-while-listing".into());
                        self.gen += 1;
                    }
                    let args = list(payload).unwrap();
                    assert_eq!(args[0], "dir");
                    let off: usize = args[1].parse().unwrap();
                    let mut all = Vec::new();
                    for c in &self.children {
                        all.extend(c.as_bytes());
                        all.push(0);
                    }
                    let mut data = alloc::format!("{}\0", self.gen).into_bytes();
                    let maxlen = PAYLOAD_MAX - data.len() - 1;
                    if self.empty_parts {
                        msg(22, id, &data)
                    } else if off >= all.len() {
                        data.push(0);
                        msg(22, id, &data)
                    } else {
                        let mut len = 0;
                        while off + len < all.len() {
                            let name = all[off + len..].iter().position(|&b| b == 0).unwrap();
                            if len + name >= maxlen {
                                break;
                            }
                            len += name + 1;
                        }
                        data.extend(&all[off..off + len]);
                        if off + len == all.len() {
                            data.push(0);
                        }
                        msg(22, id, &data)
                    }
                }
                _ => panic!("unexpected request type {kind}"),
            };
            self.out.extend(reply);
        }
    }

    impl Transport for FakeXenstored {
        fn notify(&mut self) {
            self.notified += 1;
            let p = &self.page;
            let (cons, prod) = (p.load_u32(REQ_CONS), p.load_u32(REQ_PROD));
            for i in cons..prod {
                let mut b = [0u8];
                p.read_bytes(REQ + (i % RING_BYTES) as usize, &mut b);
                self.inbuf.push(b[0]);
            }
            p.store_u32(REQ_CONS, prod);
            let mut d = Decoder::default();
            d.push(&self.inbuf);
            let mut used = 0;
            while let Some(m) = d.next_message().unwrap() {
                used += HEADER_BYTES + m.payload.len();
                self.answer(m.kind, m.req_id, &m.payload);
            }
            self.inbuf.drain(..used);
            // as much as fits in the response ring now
            let p = &self.page;
            let (cons, prod) = (p.load_u32(RSP_CONS), p.load_u32(RSP_PROD));
            let room = RING_BYTES - prod.wrapping_sub(cons);
            let n = (room as usize).min(self.out.len());
            for i in 0..n {
                let b = self.out.pop_front().unwrap();
                p.write_bytes(
                    RSP + (prod.wrapping_add(i as u32) % RING_BYTES) as usize,
                    &[b],
                );
            }
            p.store_u32(RSP_PROD, prod.wrapping_add(n as u32));
        }
        fn wait(&mut self) -> Result<(), XsError> {
            self.waits += 1;
            if self.waits > 100 {
                Err(XsError::Timeout)
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn a_reply_longer_than_the_ring_arrives_from_a_xenstored_that_writes_when_notified() {
        let mut r = Ring::new(page());
        let mut xs = FakeXenstored::new(&r);
        xs.long_value = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let m = r
            .request(MsgType::Read, 0, &[b"long"], true, &mut xs)
            .unwrap();
        assert_eq!(m.payload, xs.long_value);
        assert!(xs.out.is_empty());
        assert!(
            xs.waits < 5,
            "{} waits: each read made room and said so",
            xs.waits
        );
    }

    fn names(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| alloc::format!("a-rather-long-entry-name-{i:03}"))
            .collect()
    }

    #[test]
    fn a_directory_longer_than_a_message_is_listed_in_parts() {
        let mut r = Ring::new(page());
        let mut xs = FakeXenstored::new(&r);
        xs.children = names(300); // about 9 KiB of names: E2BIG for XS_DIRECTORY
        let got = r.directory(0, "dir", &mut xs).unwrap();
        assert_eq!(got, names(300));
        assert!(xs.parts_served >= 3, "{} parts", xs.parts_served);
        // a short one is a single XS_DIRECTORY
        xs.children = names(3);
        xs.parts_served = 0;
        assert_eq!(r.directory(0, "dir", &mut xs).unwrap(), names(3));
        assert_eq!(xs.parts_served, 0);
    }

    #[test]
    fn a_directory_changing_while_listed_is_listed_again() {
        let mut r = Ring::new(page());
        let mut xs = FakeXenstored::new(&r);
        xs.children = names(300);
        xs.change_after_parts = Some(1);
        let got = r.directory(0, "dir", &mut xs).unwrap();
        let mut want = names(300);
        want.push("added-while-listing".into());
        assert_eq!(got, want);
    }

    #[test]
    fn a_directory_listing_that_never_ends_is_an_error() {
        let mut r = Ring::new(page());
        let mut xs = FakeXenstored::new(&r);
        xs.children = names(300);
        xs.empty_parts = true;
        assert!(matches!(
            r.directory(0, "dir", &mut xs),
            Err(XsError::Protocol(_))
        ));
    }
}

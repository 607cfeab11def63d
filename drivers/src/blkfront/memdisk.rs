//! A [`BlockDevice`] over memory for host tests of the code above blkfront (the
//! synchronous helpers, dd's copy engine): its answers can be delayed, reordered,
//! failed, dropped or mislabelled, its ring and buffer pool are small on demand, and
//! it logs every request.

use super::{
    BlockDevice, BlockError, BlockOp, BlockRequest, Completion, DiskInfo, Features, IoBuf,
};
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_xen::shared::PAGE_BYTES;

/// A disk in memory: requests complete in order at the next poll unless a field
/// says otherwise. The fields are the test's to set and read:
/// - `info`, `data`: what the disk says it is, and what it holds;
/// - `pool`, `bufs_made`, `buf_limit`: buffers given back (handed out again
///   first), made so far, and that may be made at the most;
/// - `ring`: requests the ring holds (more are refused as busy);
/// - `delay`, `polls`: answers are held back until `delay` polls have passed, of
///   the `polls` seen;
/// - `fail_sector`: the request at this sector fails; `silent`: nothing is ever
///   answered; `wrong_tag`: answers carry this tag instead (a lying backend);
///   `lifo`: the newest request completes first (backends may reorder);
/// - `broken`: what [`BlockDevice::broken`] says;
/// - `detaching`: the disk is going away (the disk itself ignores it: for a
///   host that asks);
/// - `log`: (op, sector, bytes) of every request taken, in order.
#[allow(missing_docs)] // documented above, as one list
pub struct MemDisk {
    pub info: DiskInfo,
    pub data: Vec<u8>,
    pub pool: Vec<IoBuf>,
    pub bufs_made: usize,
    pub buf_limit: usize,
    pub ring: usize,
    queued: VecDeque<BlockRequest>,
    pub delay: u32,
    pub polls: u32,
    pub fail_sector: Option<u64>,
    pub silent: bool,
    pub wrong_tag: Option<u64>,
    pub lifo: bool,
    pub broken: Option<String>,
    pub detaching: bool,
    pub log: Vec<(BlockOp, u64, usize)>,
}

impl MemDisk {
    /// A 512-byte-sector disk `name` holding `data`, taking requests of up to
    /// `max_segments` pages, with flush; a ring of 4 and 64 buffers.
    pub fn new(name: &str, data: Vec<u8>, max_segments: u32) -> MemDisk {
        MemDisk {
            info: DiskInfo {
                name: name.into(),
                sectors: data.len() as u64 / 512,
                sector_size: 512,
                physical_sector_size: 512,
                readonly: false,
                removable: false,
                features: Features {
                    max_segments,
                    flush: true,
                    ..Features::default()
                },
            },
            data,
            pool: Vec::new(),
            bufs_made: 0,
            buf_limit: 64,
            ring: 4,
            queued: VecDeque::new(),
            delay: 0,
            polls: 0,
            fail_sector: None,
            silent: false,
            wrong_tag: None,
            broken: None,
            lifo: false,
            detaching: false,
            log: Vec::new(),
        }
    }

    /// Flush requests seen.
    pub fn flushes(&self) -> usize {
        self.log.iter().filter(|r| r.0 == BlockOp::Flush).count()
    }
}

impl BlockDevice for MemDisk {
    fn info(&self) -> &DiskInfo {
        &self.info
    }
    fn alloc_buf(&mut self) -> Option<IoBuf> {
        if let Some(b) = self.pool.pop() {
            return Some(b);
        }
        if self.bufs_made >= self.buf_limit {
            return None;
        }
        self.bufs_made += 1;
        Some(IoBuf::for_test())
    }
    fn free_buf(&mut self, buf: IoBuf) {
        self.pool.push(buf);
    }
    fn submit(&mut self, req: BlockRequest) -> Result<(), (BlockError, BlockRequest)> {
        if self.queued.len() >= self.ring {
            return Err((BlockError::Busy, req));
        }
        let end = req.sector * 512 + req.bytes as u64;
        if end > self.data.len() as u64 {
            return Err((BlockError::Invalid("beyond the end of the disk"), req));
        }
        self.log.push((req.op, req.sector, req.bytes));
        self.queued.push_back(req);
        Ok(())
    }
    fn kick(&mut self) {}
    fn poll(&mut self, out: &mut Vec<Completion>) {
        self.polls += 1;
        if self.silent || self.polls <= self.delay {
            return;
        }
        while let Some(req) = if self.lifo {
            self.queued.pop_back()
        } else {
            self.queued.pop_front()
        } {
            let start = req.sector as usize * 512;
            let mut result = Ok(());
            if Some(req.sector) == self.fail_sector {
                result = Err(BlockError::Io);
            } else {
                for (i, b) in req.bufs.iter().enumerate() {
                    let s = start + i * PAGE_BYTES;
                    let e = (s + PAGE_BYTES).min(start + req.bytes);
                    match req.op {
                        BlockOp::Read => b.write_at(0, &self.data[s..e]),
                        BlockOp::Write => b.read_at(0, &mut self.data[s..e]),
                        _ => {}
                    }
                }
            }
            out.push(Completion {
                tag: self.wrong_tag.unwrap_or(req.tag),
                result,
                bufs: req.bufs,
            });
        }
    }
    fn in_flight(&self) -> usize {
        self.queued.len()
    }
    fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }
    fn wait(&self) {}
}

//! Xenbus device discovery: the `device/vbd/*` and `device/vif/*` entries the
//! toolstack wrote for this domain, with their backends.

use crate::xen::xenstore;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_xen::xenbus::XenbusState;
use xenlet_xen::xenstore::XsError;

/// A backend in state `s` is going or gone: no state, or Closing, Closed, Unknown.
pub fn going(s: Option<XenbusState>) -> bool {
    matches!(
        s,
        None | Some(XenbusState::Closing | XenbusState::Closed | XenbusState::Unknown)
    )
}

/// A PV device the toolstack configured.
#[derive(Clone, Debug)]
pub struct Device {
    /// `vbd` or `vif`.
    pub kind: &'static str,
    /// Device id (the XenStore key, e.g. 768 for xvda, 0 for the first vif).
    pub id: String,
    /// Our (frontend) state.
    pub state: Option<XenbusState>,
    /// Backend path.
    pub backend: String,
    /// Backend domain.
    pub backend_id: Option<u16>,
    /// Backend state.
    pub backend_state: Option<XenbusState>,
}

impl Device {
    /// The backend is going or gone (no state, or Closing, Closed, Unknown): the
    /// device is being taken away.
    pub fn backend_going(&self) -> bool {
        going(self.backend_state)
    }

    /// Frontend path, relative to the domain's home.
    pub fn path(&self) -> String {
        alloc::format!("device/{}/{}", self.kind, self.id)
    }

    /// Linux-style name: xvda… for vbd ids 51712+ (xvd major 202), hda… for IDE
    /// ids (3 and 22), eth0… for vifs.
    pub fn name(&self) -> String {
        let id: u32 = self.id.parse().unwrap_or(u32::MAX);
        match self.kind {
            "vif" => alloc::format!("eth{id}"),
            _ if id >> 8 == 202 => disk_name("xvd", (id & 0xff) >> 4),
            _ if id & (1 << 28) != 0 => disk_name("xvd", (id >> 8) & 0xfffff),
            _ if id >> 8 == 3 => disk_name("hd", (id & 0xff) >> 6),
            _ if id >> 8 == 22 => disk_name("hd", 2 + ((id & 0xff) >> 6)),
            _ => alloc::format!("vbd{}", self.id),
        }
    }
}

fn disk_name(prefix: &str, index: u32) -> String {
    let letter = char::from(b'a' + (index % 26) as u8);
    alloc::format!("{prefix}{letter}")
}

fn state_at(path: &str) -> Option<XenbusState> {
    xenstore::read(path)
        .ok()
        .and_then(|s| XenbusState::parse(&s))
}

/// Lists the vbd and vif devices in XenStore.
pub fn enumerate() -> Result<Vec<Device>, XsError> {
    let mut out = Vec::new();
    for kind in ["vbd", "vif"] {
        let ids = match xenstore::directory(&alloc::format!("device/{kind}")) {
            Ok(ids) => ids,
            Err(e) if e.is_enoent() => continue,
            Err(e) => return Err(e),
        };
        for id in ids {
            let base = alloc::format!("device/{kind}/{id}");
            let backend = xenstore::read(&alloc::format!("{base}/backend")).unwrap_or_default();
            let backend_id = xenstore::read(&alloc::format!("{base}/backend-id"))
                .ok()
                .and_then(|s| s.parse().ok());
            let backend_state = if backend.is_empty() {
                None
            } else {
                state_at(&alloc::format!("{backend}/state"))
            };
            out.push(Device {
                kind,
                state: state_at(&alloc::format!("{base}/state")),
                id,
                backend,
                backend_id,
                backend_state,
            });
        }
    }
    Ok(out)
}

//! TCP connection states and the transition table between them.
//!
//! The table is Linux's `tcp_conntracks[2][6][TCP_CONNTRACK_MAX]` in
//! `net/netfilter/nf_conntrack_proto_tcp.c` (rows: SYN, SYN+ACK, FIN, ACK, RST, none;
//! columns: the current state), one per direction. Like Linux with `be_liberal`, no
//! sequence-number window is checked: the states and their timeouts are what the router
//! needs, and strict window tracking breaks on real stacks (offloads, SACK, missed
//! segments). Unlike Linux's `nf_conntrack_tcp_loose`, a connection is never picked up
//! mid-stream: only a SYN starts one (anything else is INVALID, which keeps a stray ACK
//! from leaving a masquerading interface untranslated).

use crate::flow::tcp_flag;

/// A TCP connection's state as conntrack sees it (Linux `enum tcp_conntrack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TcpState {
    /// No state (not used by live entries).
    None,
    /// SYN seen from the originator.
    SynSent,
    /// SYN+ACK seen from the responder.
    SynRecv,
    /// Three-way handshake completed.
    Established,
    /// FIN seen in one direction.
    FinWait,
    /// ACK of the first FIN seen.
    CloseWait,
    /// FIN seen in the other direction.
    LastAck,
    /// Both FINs seen and the last one acknowledged.
    TimeWait,
    /// RST seen (or closed).
    Close,
    /// Simultaneous open: SYN seen from both sides.
    SynSent2,
}

impl TcpState {
    /// The name `conntrack -L` prints.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::None => "NONE",
            TcpState::SynSent => "SYN_SENT",
            TcpState::SynRecv => "SYN_RECV",
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait => "FIN_WAIT",
            TcpState::CloseWait => "CLOSE_WAIT",
            TcpState::LastAck => "LAST_ACK",
            TcpState::TimeWait => "TIME_WAIT",
            TcpState::Close => "CLOSE",
            TcpState::SynSent2 => "SYN_SENT2",
        }
    }

    fn column(self) -> usize {
        self as usize
    }
}

/// What a segment's flags say (Linux `get_conntrack_index`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TcpEvent {
    Syn,
    SynAck,
    Fin,
    Ack,
    Rst,
    None,
}

impl TcpEvent {
    /// The event of a segment with these flags.
    pub(crate) fn of(flags: u8) -> TcpEvent {
        if flags & tcp_flag::RST != 0 {
            TcpEvent::Rst
        } else if flags & tcp_flag::SYN != 0 {
            if flags & tcp_flag::ACK != 0 {
                TcpEvent::SynAck
            } else {
                TcpEvent::Syn
            }
        } else if flags & tcp_flag::FIN != 0 {
            TcpEvent::Fin
        } else if flags & tcp_flag::ACK != 0 {
            TcpEvent::Ack
        } else {
            TcpEvent::None
        }
    }

    fn row(self) -> usize {
        match self {
            TcpEvent::Syn => 0,
            TcpEvent::SynAck => 1,
            TcpEvent::Fin => 2,
            TcpEvent::Ack => 3,
            TcpEvent::Rst => 4,
            TcpEvent::None => 5,
        }
    }
}

/// Whether this flag combination can occur in a valid segment (Linux
/// `tcp_valid_flags`: ECE, CWR and PSH do not matter; SYN+FIN, SYN+RST, a FIN without
/// ACK, no flags at all are invalid).
pub(crate) fn valid_flags(flags: u8) -> bool {
    use tcp_flag::*;
    const SYN_URG: u8 = SYN | URG;
    const SYN_ACK: u8 = SYN | ACK;
    const RST_ACK: u8 = RST | ACK;
    const FIN_ACK: u8 = FIN | ACK;
    const FIN_ACK_URG: u8 = FIN | ACK | URG;
    const ACK_URG: u8 = ACK | URG;
    // a match, not a search of a list: every segment asks
    matches!(
        flags & !(ECE | CWR | PSH),
        SYN | SYN_URG | SYN_ACK | RST | RST_ACK | FIN_ACK | FIN_ACK_URG | ACK | ACK_URG
    )
}

/// The outcome of a segment in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    /// Move to this state (may be the same one).
    To(TcpState),
    /// Let the segment through without changing anything (Linux `sIG`).
    Ignore,
    /// Not valid here (Linux `sIV`).
    Invalid,
}

use Transition::{Ignore as IG, Invalid as IV};
const SS: Transition = Transition::To(TcpState::SynSent);
const SR: Transition = Transition::To(TcpState::SynRecv);
const ES: Transition = Transition::To(TcpState::Established);
const FW: Transition = Transition::To(TcpState::FinWait);
const CW: Transition = Transition::To(TcpState::CloseWait);
const LA: Transition = Transition::To(TcpState::LastAck);
const TW: Transition = Transition::To(TcpState::TimeWait);
const CL: Transition = Transition::To(TcpState::Close);
const S2: Transition = Transition::To(TcpState::SynSent2);

/// `TABLE[direction][event][state]`, direction 0 = original, 1 = reply.
#[rustfmt::skip]
const TABLE: [[[Transition; 10]; 6]; 2] = [
    [
        //         sNO sSS sSR sES sFW sCW sLA sTW sCL sS2
        /* syn */ [SS, SS, IG, IG, IG, IG, IG, SS, SS, S2],
        /* s+a */ [IV, IV, SR, IV, IV, IV, IV, IV, IV, SR],
        /* fin */ [IV, IV, FW, FW, LA, LA, LA, TW, CL, IV],
        /* ack */ [ES, IV, ES, ES, CW, CW, TW, TW, CL, IV],
        /* rst */ [IV, CL, CL, CL, CL, CL, CL, CL, CL, CL],
        /* non */ [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV],
    ],
    [
        //         sNO sSS sSR sES sFW sCW sLA sTW sCL sS2
        /* syn */ [IV, S2, IV, IV, IV, IV, IV, SS, IV, S2],
        /* s+a */ [IV, SR, IG, IG, IG, IG, IG, IG, IG, SR],
        /* fin */ [IV, IV, FW, FW, LA, LA, LA, TW, CL, IV],
        /* ack */ [IV, IG, SR, ES, CW, CW, TW, TW, CL, IG],
        /* rst */ [IV, CL, CL, CL, CL, CL, CL, CL, CL, CL],
        /* non */ [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV],
    ],
];

/// The transition for a segment with `flags` in direction `reply` (false: original)
/// from `state`.
pub(crate) fn transition(is_reply: bool, flags: u8, state: TcpState) -> Transition {
    if !valid_flags(flags) {
        return Transition::Invalid;
    }
    TABLE[usize::from(is_reply)][TcpEvent::of(flags).row()][state.column()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcp_flag::*;

    #[test]
    fn valid_flags_are_linuxs_nine() {
        // tcp_valid_flags[] of nf_conntrack_proto_tcp.c, ECE/CWR/PSH masked out
        let linux = [
            SYN,
            SYN | URG,
            SYN | ACK,
            RST,
            RST | ACK,
            FIN | ACK,
            FIN | ACK | URG,
            ACK,
            ACK | URG,
        ];
        for f in 0..=255u8 {
            let want = linux.contains(&(f & !(ECE | CWR | PSH)));
            assert_eq!(valid_flags(f), want, "flags {f:#04x}");
        }
    }

    #[test]
    fn handshake_and_close() {
        let mut s = TcpState::None;
        for (reply, flags, want) in [
            (false, SYN, TcpState::SynSent),
            (true, SYN | ACK, TcpState::SynRecv),
            (false, ACK, TcpState::Established),
            (false, FIN | ACK, TcpState::FinWait),
            (true, ACK, TcpState::CloseWait),
            (true, FIN | ACK, TcpState::LastAck),
            (false, ACK, TcpState::TimeWait),
        ] {
            match transition(reply, flags, s) {
                Transition::To(n) => s = n,
                t => panic!("{flags:#x} in {s:?}: {t:?}"),
            }
            assert_eq!(s, want);
        }
    }

    #[test]
    fn bad_flag_combinations_are_invalid() {
        assert_eq!(
            transition(false, SYN | FIN, TcpState::None),
            Transition::Invalid
        );
        assert_eq!(
            transition(false, 0, TcpState::Established),
            Transition::Invalid
        );
        assert_eq!(
            transition(false, FIN, TcpState::Established),
            Transition::Invalid
        );
        assert_eq!(
            transition(false, SYN | RST, TcpState::Established),
            Transition::Invalid
        );
        // PSH/ECE/CWR do not change the meaning
        assert_eq!(
            transition(false, ACK | PSH | ECE, TcpState::Established),
            Transition::To(TcpState::Established)
        );
    }

    #[test]
    fn ack_without_syn_does_not_open_from_none_in_reply() {
        assert_eq!(transition(true, ACK, TcpState::None), Transition::Invalid);
        assert_eq!(transition(true, RST, TcpState::Established), CL);
        // a retransmitted SYN+ACK after the handshake is ignored, not invalid
        assert_eq!(
            transition(true, SYN | ACK, TcpState::Established),
            Transition::Ignore
        );
    }
}

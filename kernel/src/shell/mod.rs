//! The shell: the command table and loop ([`commands`], with the system, Xen, disk and
//! network commands in a file per family), the state commands share
//! ([`host`]), the file commands ([`fscmds`]), the router's ([`routecmds`]), the LAN
//! services' ([`servicecmds`]), and `dd` between devices ([`dd`]) and with files
//! ([`ddfile`]).

pub mod commands;
pub mod dd;
pub mod ddfile;
pub mod fscmds;
pub mod host;
pub mod routecmds;
pub mod servicecmds;

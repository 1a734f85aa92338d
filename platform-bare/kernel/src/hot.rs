//! The hot paths as functions of their own (never inlined, unmangled), so that their
//! machine code has a symbol whose size `scripts/bare.sh` reports. The kernel calls each
//! and checks what it returns.

use commcore::av::{Lpid, Pgid};
use commcore::cid::store::{CidStore, Flat};
use commcore::cid::Cid;
use commcore::coll::{Schedule, Step};
use commcore::rankmap::{Rank, RankMap};

/// `(comm, rank) → (pgid, lpid)`: one match over the rank map's model.
#[inline(never)]
#[no_mangle]
pub fn commcore_hot_translate(map: &RankMap<'_>, rank: Rank) -> Option<(Pgid, Lpid)> {
    map.translate(rank)
}

/// CID → communicator in a flat store: one load.
#[inline(never)]
#[no_mangle]
pub fn commcore_hot_cid_lookup(store: &Flat<'_, u16>, cid: Cid) -> Option<u16> {
    store.get(cid)
}

/// The next step of one rank's collective schedule.
#[inline(never)]
#[no_mangle]
pub fn commcore_hot_schedule_step(schedule: &mut Schedule<'_>) -> Option<Step> {
    schedule.next()
}

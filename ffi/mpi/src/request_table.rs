//! The table of requests: a slab indexed by the handle's index bits, its vacant slots
//! reused (no hashing, no allocation once it has grown to the program's window).

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};

use commcore_linux::runtime::{Request, RequestSet};

use crate::consts::MpiStatus;
use crate::consts::{MPI_ERR_INTERN, MPI_REQUEST_NULL};
use crate::error::{fail, MpiResult};
use crate::request::Pending;
use crate::state::REQUEST_KIND;
use crate::{call, status};

const INDEX_MASK: u32 = 0x03ff_ffff;

/// The index bit of the handles of sends that completed when they started
/// ([`sent_handle`]); slots are indexed below it.
const SENT_BIT: u32 = 0x0200_0000;

/// Counts the handles [`sent_handle`] gave out.
static SENT: AtomicU32 = AtomicU32::new(0);

/// A handle for a send that completed when it started: in no slot, complete with MPI's
/// empty status (a send's status fields are undefined), and distinct from the handles of
/// other requests the program holds (unless it holds 2^25 such sends), for tools that
/// track requests by handle.
#[inline]
pub(crate) fn sent_handle() -> c_int {
    let n = SENT.fetch_add(1, Ordering::Relaxed) & (SENT_BIT - 1);
    (REQUEST_KIND | SENT_BIT | n) as c_int
}

/// Whether `handle` is one of [`sent_handle`]'s.
#[inline]
pub(crate) fn is_sent(handle: c_int) -> bool {
    handle as u32 & !(SENT_BIT - 1) == REQUEST_KIND | SENT_BIT
}

/// The request behind a [`sent_handle`]: complete, its errors (none) going where the
/// call's go.
fn sent() -> Pending {
    Pending::finished(call::call_comm(), status::inactive())
}

/// Requests by handle. A slot taken out stays reserved for its handle until released,
/// so that the request can be put back under the same handle.
#[derive(Default)]
pub(crate) struct RequestTable {
    slots: Vec<Slot>,
    /// Slots no handle holds.
    vacant: Vec<u32>,
    /// What [`RequestTable::get_mut`] lends for a [`sent_handle`].
    sent: Option<Pending>,
}

// Requests are stored inline: a box each would be an allocation per message.
#[allow(clippy::large_enum_variant)]
enum Slot {
    Held(Pending),
    /// Taken out, its handle still the program's.
    Reserved,
    Vacant,
}

/// What [`RequestTable::end_in_place`] found.
pub(crate) enum InPlace {
    /// The request ended: its communicator and outcome; its handle is no more.
    Ended(c_int, MpiResult<MpiStatus>),
    /// It runs still (tested), on this communicator.
    Running(c_int),
    /// Not a request that ends in place (or no request): the general path decides.
    NotHere,
}

/// The slot of `handle`, if it has the kind bits of a request.
fn slot(handle: c_int) -> Option<usize> {
    let bits = handle as u32;
    let index = bits & INDEX_MASK;
    (bits & !INDEX_MASK == REQUEST_KIND && index > 0 && index < SENT_BIT)
        .then(|| index as usize - 1)
}

impl RequestTable {
    /// Stores `pending` in a vacant slot; its new handle. Fails once the program holds
    /// 2^25 - 1 requests at once: the indices above are [`sent_handle`]'s.
    pub fn add(&mut self, pending: Pending) -> MpiResult<c_int> {
        if self.vacant.is_empty() && self.slots.len() >= SENT_BIT as usize - 1 {
            return fail(
                MPI_ERR_INTERN,
                "the program holds 2^25 - 1 requests at once, as many as the library can track",
            );
        }
        let index = match self.vacant.pop() {
            Some(index) => {
                self.slots[index as usize] = Slot::Held(pending);
                index
            }
            None => {
                self.slots.push(Slot::Held(pending));
                (self.slots.len() - 1) as u32
            }
        };
        Ok((REQUEST_KIND | (index + 1)) as c_int)
    }

    pub fn get_mut(&mut self, handle: &c_int) -> Option<&mut Pending> {
        if is_sent(*handle) {
            return Some(self.sent.insert(sent()));
        }
        match self.slots.get_mut(slot(*handle)?)? {
            Slot::Held(pending) => Some(pending),
            _ => None,
        }
    }

    /// Tests request `handle` where it lies, if it may end there
    /// ([`Pending::ends_in_place`]): once finished it is dropped in its slot, which serves
    /// another (no move out and back).
    pub fn end_in_place(&mut self, handle: c_int) -> InPlace {
        let Some(index) = slot(handle) else {
            if is_sent(handle) {
                return InPlace::Ended(call::call_comm(), Ok(status::inactive()));
            }
            return InPlace::NotHere;
        };
        let Some(Slot::Held(pending)) = self.slots.get_mut(index) else { return InPlace::NotHere };
        if !pending.ends_in_place() {
            return InPlace::NotHere;
        }
        let outcome = match pending.test_to_end() {
            Ok(None) => return InPlace::Running(pending.comm),
            Ok(Some(status)) => Ok(status),
            // Ended, with an error (a truncated receive).
            Err(error) => Err(error),
        };
        let comm = pending.comm;
        self.slots[index] = Slot::Vacant;
        self.vacant.push(index as u32);
        InPlace::Ended(comm, outcome)
    }

    /// Takes the request out; its slot stays reserved (see [`RequestTable::release`]). (A
    /// [`sent_handle`] has no slot: putting it back or releasing it does nothing.)
    pub fn remove(&mut self, handle: &c_int) -> Option<Pending> {
        if is_sent(*handle) {
            return Some(sent());
        }
        let entry = self.slots.get_mut(slot(*handle)?)?;
        if !matches!(entry, Slot::Held(_)) {
            return None;
        }
        match std::mem::replace(entry, Slot::Reserved) {
            Slot::Held(pending) => Some(pending),
            _ => None,
        }
    }

    /// Puts a request taken out back under its handle.
    pub fn insert(&mut self, handle: c_int, pending: Pending) {
        if let Some(entry) = slot(handle).and_then(|index| self.slots.get_mut(index)) {
            if matches!(entry, Slot::Reserved) {
                *entry = Slot::Held(pending);
            }
        }
    }

    /// The receives in flight of `handles`, as the runtime's window run reaches them; `None`
    /// unless the first request is one (a window whose receives found their messages
    /// when posted has nothing to run, and would pay for the walk).
    pub fn window<'t>(&'t mut self, handles: &'t [c_int]) -> Option<Window<'t>> {
        let mut window = Window { slots: &mut self.slots, handles };
        let first = handles.iter().position(|&handle| handle != MPI_REQUEST_NULL)?;
        window.request(first)?;
        Some(window)
    }

    /// Ends the handle of a request taken out: its slot may serve another.
    pub fn release(&mut self, handle: c_int) {
        if let Some(index) = slot(handle) {
            if matches!(self.slots.get(index), Some(Slot::Reserved)) {
                self.slots[index] = Slot::Vacant;
                self.vacant.push(index as u32);
            }
        }
    }
}

/// The requests of a wait on many, by the program's handles: each entry a receive in flight
/// that ends in its slot, or none (passed over).
pub(crate) struct Window<'t> {
    slots: &'t mut [Slot],
    handles: &'t [c_int],
}

impl RequestSet<'static> for Window<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.handles.len()
    }

    #[inline]
    fn request(&mut self, i: usize) -> Option<&mut Request<'static>> {
        match self.slots.get_mut(slot(*self.handles.get(i)?)?)? {
            Slot::Held(pending) => pending.window_receive(),
            _ => None,
        }
    }
}

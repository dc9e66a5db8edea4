//! The executions this hub runs now, each behind a lock of its own.
//!
//! Why not one lock for the kitchen: a commit waits for an fsync, and an execution's change is
//! committed before its lock is released (so whatever a client can read is durable). Under
//! one lock, a stop on one device waited for every other device's commits and for the clock
//! step of all of them. Here the map's own lock ([`Live`]) is a plain mutex held only to look
//! up, insert or remove a slot — never across an `.await`, a storage call or a simulation
//! step — and each execution's [`LiveRun`] sits behind its own async mutex, held while its
//! change is made and committed. Two executions never wait for each other except in the one
//! commit a clock step or a kitchen alarm writes for all of them.
//!
//! A start inserts its slot *before* committing the new record, with the run's lock already
//! taken by the start itself: from then on the id and the device are taken, a recall sees it,
//! and anyone who wants the run (a stop, a status read, the clock) waits until the record is
//! durable. If the commit fails, the start marks the run [`LiveRun::gone`] and removes the
//! slot; a waiter that then gets the lock sees `gone` and treats the execution as never live.
//!
//! Lock order: a run's lock may be held while the map's lock is taken (to remove a slot that
//! became final), never the reverse; the map's lock is synchronous and never held across an
//! `.await`, so no cycle can form.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::executor::Run;
use canonical_json::Value;
use tokio::sync::OwnedMutexGuard;

/// A live execution: its device and its simulation (derefs to the simulation).
#[derive(Debug)]
pub(crate) struct LiveRun {
    pub device: String,
    pub sim: Box<dyn Run>,
    /// The run was never stored (its start's commit failed) or was taken over by another
    /// replica: whoever holds its lock must leave it alone.
    pub gone: bool,
}

impl std::ops::Deref for LiveRun {
    type Target = dyn Run;
    fn deref(&self) -> &(dyn Run + 'static) {
        &*self.sim
    }
}

impl std::ops::DerefMut for LiveRun {
    fn deref_mut(&mut self) -> &mut (dyn Run + 'static) {
        &mut *self.sim
    }
}

/// A locked run (held across its commit).
pub(crate) type RunGuard = OwnedMutexGuard<LiveRun>;

/// One execution in the map.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The device it runs on.
    pub device: String,
    /// True for an accepted execution (it occupies its device); false for a refused one
    /// whose record is being committed (only its id is taken).
    pub occupies: bool,
    /// True once its record is stored (a heartbeat names only those).
    pub stored: bool,
    /// The recipe it runs, and that recipe's document hash (a recall is decided on these
    /// without a storage read).
    pub recipe: Option<(Arc<Value>, String)>,
    /// The run itself.
    pub run: Arc<tokio::sync::Mutex<LiveRun>>,
    /// Simulated ms a clock step owes the run: a step that finds the run locked (a stop or a
    /// resume being committed) does not wait for it, and leaves its time here for the next.
    pub owed_ms: Arc<std::sync::atomic::AtomicU64>,
}

#[derive(Debug, Default)]
struct Map {
    slots: HashMap<String, Slot>,
    /// Occupying slots per device.
    busy: HashMap<String, usize>,
    /// Moves whenever the recalls in force change (see [`Live::recalls_changed`]).
    recalls: u64,
}

/// What a start's decision read from the map; the start is inserted only if it still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The device was occupied.
    pub busy: bool,
    /// The recalls generation.
    pub recalls: u64,
}

/// Why [`Live::insert_if`] did not insert.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InsertRefused {
    /// The id is live or being created.
    Exists,
    /// The device or the recalls changed since the decision: decide again.
    Changed,
}

/// Why [`Live::decide_locked`] did not insert.
#[derive(Debug)]
pub(crate) enum Locked<E> {
    /// The id is live or being created.
    Exists,
    /// The decision failed.
    Failed(E),
}

/// The live executions (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Live {
    map: Mutex<Map>,
}

impl Live {
    /// The map (a poisoned lock is recovered: every operation leaves it consistent).
    fn map(&self) -> MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True if `id` is live or being created here.
    pub fn contains(&self, id: &str) -> bool {
        self.map().slots.contains_key(id)
    }

    /// The slot of `id`.
    pub fn slot(&self, id: &str) -> Option<Slot> {
        self.map().slots.get(id).cloned()
    }

    /// Every slot, by id (sorted, so walks and commits are in a stable order).
    pub fn slots(&self) -> Vec<(String, Slot)> {
        let mut all: Vec<(String, Slot)> =
            self.map().slots.iter().map(|(id, s)| (id.clone(), s.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The number of slots.
    pub fn len(&self) -> usize {
        self.map().slots.len()
    }

    /// What a start on `device` decides on, or `None` if `id` is already taken.
    pub fn seen(&self, id: &str, device: &str) -> Option<Seen> {
        let map = self.map();
        if map.slots.contains_key(id) {
            return None;
        }
        Some(Seen { busy: map.busy.get(device).is_some_and(|n| *n > 0), recalls: map.recalls })
    }

    /// Inserts `slot` as `id` if what the start decided on (`seen`) still holds, and returns
    /// its run's guard: the run is locked by the start until its record is committed.
    ///
    /// # Errors
    /// The id is taken, or the device or the recalls changed.
    pub fn insert_if(&self, id: &str, seen: Seen, slot: Slot) -> Result<RunGuard, InsertRefused> {
        let mut map = self.map();
        if map.slots.contains_key(id) {
            return Err(InsertRefused::Exists);
        }
        let busy = map.busy.get(&slot.device).is_some_and(|n| *n > 0);
        if busy != seen.busy || map.recalls != seen.recalls {
            return Err(InsertRefused::Changed);
        }
        // A run no one else has seen yet: its lock is free.
        let guard = slot.run.clone().try_lock_owned().map_err(|_| InsertRefused::Changed)?;
        if slot.occupies {
            *map.busy.entry(slot.device.clone()).or_default() += 1;
        }
        map.slots.insert(id.to_owned(), slot);
        Ok(guard)
    }

    /// Decides a start with the map's lock held (`decide` is given whether the device is
    /// occupied), and inserts the slot it returns: the fallback of a start whose optimistic
    /// attempts kept finding the map changed. `decide` must not block.
    ///
    /// # Errors
    /// The id is taken, or `decide` failed.
    pub fn decide_locked<T, E>(
        &self,
        id: &str,
        device: &str,
        decide: impl FnOnce(bool) -> Result<(T, Slot), E>,
    ) -> Result<(T, RunGuard), Locked<E>> {
        let mut map = self.map();
        if map.slots.contains_key(id) {
            return Err(Locked::Exists);
        }
        let busy = map.busy.get(device).is_some_and(|n| *n > 0);
        let (out, slot) = decide(busy).map_err(Locked::Failed)?;
        let guard = slot.run.clone().try_lock_owned().map_err(|_| Locked::Exists)?;
        if slot.occupies {
            *map.busy.entry(slot.device.clone()).or_default() += 1;
        }
        map.slots.insert(id.to_owned(), slot);
        Ok((out, guard))
    }

    /// Marks `id` as stored.
    pub fn mark_stored(&self, id: &str) {
        if let Some(s) = self.map().slots.get_mut(id) {
            s.stored = true;
        }
    }

    /// Removes `id` (ended, never stored, or taken over).
    pub fn remove(&self, id: &str) {
        let mut map = self.map();
        if let Some(slot) = map.slots.remove(id)
            && slot.occupies
            && let Some(n) = map.busy.get_mut(&slot.device)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.busy.remove(&slot.device);
            }
        }
    }

    /// Removes every slot on one of `devices`; returns the ids and devices removed.
    pub fn remove_on(&self, devices: &[String]) -> Vec<(String, String)> {
        let ids: Vec<(String, String)> = self
            .map()
            .slots
            .iter()
            .filter(|(_, s)| devices.contains(&s.device))
            .map(|(id, s)| (id.clone(), s.device.clone()))
            .collect();
        for (id, _) in &ids {
            self.remove(id);
        }
        ids
    }

    /// The stored executions (id and device), by id.
    pub fn stored(&self) -> Vec<(String, String)> {
        let mut ids: Vec<(String, String)> = self
            .map()
            .slots
            .iter()
            .filter(|(_, s)| s.stored)
            .map(|(id, s)| (id.clone(), s.device.clone()))
            .collect();
        ids.sort();
        ids
    }

    /// The devices with an occupying slot, sorted.
    pub fn busy_devices(&self) -> Vec<String> {
        let mut d: Vec<String> = self.map().busy.keys().cloned().collect();
        d.sort();
        d
    }

    /// Runs `change` on the recalls in force while no start can be inserted; if it changed
    /// them (returned true), moves the recalls generation, so every start decided on the
    /// earlier recalls decides again, and returns the slots the recalls now in force apply to
    /// (`covers` decides), live or being created. A start inserted before this is among them;
    /// one inserted after decided on the new recalls. `None`: nothing changed.
    pub fn recalls_changed(
        &self,
        change: impl FnOnce() -> bool,
        covers: impl Fn(&Value, &str) -> bool,
    ) -> Option<Vec<(String, Slot)>> {
        let mut map = self.map();
        if !change() {
            return None;
        }
        map.recalls = map.recalls.wrapping_add(1);
        let mut hit: Vec<(String, Slot)> = map
            .slots
            .iter()
            .filter(|(_, s)| s.recipe.as_ref().is_some_and(|(r, h)| covers(r, h)))
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect();
        hit.sort_by(|a, b| a.0.cmp(&b.0));
        Some(hit)
    }
}

/// The runs among `slots` that are free now, locked, with the simulated ms each is owed
/// besides `dt_ms`; a run locked by someone else is skipped and owed `dt_ms` (so a clock step
/// never waits behind a stop's commit, nor makes the stops of other runs wait behind it).
pub(crate) fn lock_free(slots: Vec<(String, Slot)>, dt_ms: u64) -> Vec<(String, RunGuard, u64)> {
    use std::sync::atomic::Ordering;
    let mut out = Vec::with_capacity(slots.len());
    for (id, slot) in slots {
        match slot.run.clone().try_lock_owned() {
            Ok(guard) => {
                let owed = slot.owed_ms.swap(0, Ordering::AcqRel);
                // A stored run still here once final is one whose final commit failed (every
                // change that ends a run removes it after its commit): the step commits its
                // final status again and removes it, or the device would stay busy.
                if !guard.gone && (!guard.sim.is_final() || slot.stored) {
                    out.push((id, guard, dt_ms.saturating_add(owed)));
                }
            }
            // A run still being created did not exist before this step: it is owed nothing.
            Err(_) if slot.stored => {
                slot.owed_ms.fetch_add(dt_ms, Ordering::AcqRel);
            }
            Err(_) => {}
        }
    }
    out
}

/// Locks `slots` one after the other (in the given order) and returns the guards of the runs
/// still live (neither gone nor final).
pub(crate) async fn lock_live(slots: Vec<(String, Slot)>) -> Vec<(String, RunGuard)> {
    let mut out = Vec::with_capacity(slots.len());
    for (id, slot) in slots {
        let guard = slot.run.lock_owned().await;
        if !guard.gone && !guard.sim.is_final() {
            out.push((id, guard));
        }
    }
    out
}

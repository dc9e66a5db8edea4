//! The connection budget: who gives way when it is full.

use super::*;

fn limits(max: usize, per: usize) -> ConnLimits {
    ConnLimits { max_connections: max, max_per_address: per, ..ConnLimits::default() }
}

#[test]
fn a_full_address_budget_gives_way_oldest_idle_first_never_a_handled_one() {
    let r = Arc::new(Registry::new(&limits(100, 3)));
    let a: IpAddr = [127, 0, 0, 1].into();
    let b: IpAddr = [127, 0, 0, 2].into();
    let s0 = r.admit(a).map(|s| s.id);
    let s1 = r.admit(a).map(|s| s.id);
    let _s2 = r.admit(a);
    let other = r.admit(b).map(|s| s.id);
    // The oldest from `a` is being handled: the next oldest of `a` goes.
    let _busy = r.busy(s0.unwrap_or_default());
    let s3 = r.admit(a);
    assert!(s3.is_some());
    let t = r.table();
    assert!(t.conns.contains_key(&s0.unwrap_or_default()));
    assert!(!t.conns.contains_key(&s1.unwrap_or_default()));
    assert!(t.conns.contains_key(&other.unwrap_or_default()));
    assert_eq!(t.per_address.get(&a), Some(&3));
    assert_eq!(t.conns.len(), 4);
}

#[test]
fn a_budget_of_handled_connections_refuses_the_new_one() {
    let r = Arc::new(Registry::new(&limits(2, 2)));
    let a: IpAddr = [10, 0, 0, 1].into();
    let ids: Vec<u64> = (0..2).filter_map(|_| r.admit(a).map(|s| s.id)).collect();
    let _held: Vec<Busy> = ids.iter().map(|id| r.busy(*id)).collect();
    assert!(r.admit(a).is_none());
    assert!(r.admit([10, 0, 0, 2].into()).is_none());
    assert_eq!(r.open(), 2);
}

#[test]
fn the_overall_budget_evicts_across_addresses_and_the_flood_only_displaces_itself() {
    let r = Arc::new(Registry::new(&limits(8, 8)));
    let flood: IpAddr = [127, 0, 0, 1].into();
    let stop = r.admit(flood).map(|s| s.id).unwrap_or_default();
    let _handled = r.busy(stop);
    for _ in 0..1000 {
        assert!(r.admit(flood).is_some());
    }
    assert_eq!(r.open(), 8);
    assert!(r.table().conns.contains_key(&stop));
}

#[test]
fn an_evicted_connection_is_told_to_close_and_its_release_is_harmless() {
    let r = Arc::new(Registry::new(&limits(1, 1)));
    let a: IpAddr = [127, 0, 0, 1].into();
    let first = r.admit(a);
    assert!(r.admit(a).is_some());
    let first = first.map(|s| (s.id, s.close));
    let (id, close) = first.unwrap_or((0, Arc::new(Notify::new())));
    // The permit is stored: the connection task sees it whenever it next waits.
    let notified = close.notified();
    futures_util::pin_mut!(notified);
    assert!(futures_util::FutureExt::now_or_never(notified).is_some());
    r.release(id);
    assert_eq!(r.open(), 1);
    assert_eq!(r.table().per_address.get(&a), Some(&1));
}

#[test]
fn an_answer_that_is_not_read_gives_way_after_the_send_grace() {
    let now = Instant::now();
    let long_ago = now.checked_sub(SEND_GRACE + Duration::from_secs(1)).unwrap_or(now);
    assert!(!Phase::Sending(now).gives_way());
    assert!(Phase::Sending(long_ago).gives_way() || long_ago == now);
    assert!(!Phase::Handling.gives_way());
    assert!(Phase::Receiving.gives_way());
    assert!(Phase::Waiting(None).gives_way());
    // Through the registry: a handled connection turns into a sending one, then idle.
    let r = Arc::new(Registry::new(&limits(4, 4)));
    let id = r.admit([127, 0, 0, 1].into()).map(|s| s.id).unwrap_or_default();
    let sending = r.busy(id).sending();
    assert!(r.is_busy(id));
    assert!(r.idle_since(id).is_none());
    drop(sending);
    assert!(!r.is_busy(id));
    assert!(r.idle_since(id).is_some());
}

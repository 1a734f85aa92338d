//! The boundary's rules, checked from Rust (and under miri): handle checks, the panic
//! guard, slices from C, and one pass through each mechanism.

use core::ffi::CStr;
use core::ptr::{null, null_mut};

use crate::handle::{self, QUARANTINE};
use crate::result::*;
use crate::*;

fn last_error() -> String {
    // SAFETY: `commcore_last_error` returns a NUL-terminated string that stays valid until
    // the next failure on this thread.
    unsafe { CStr::from_ptr(commcore_last_error()) }.to_string_lossy().into_owned()
}

fn groups_with(n: u32) -> (*mut commcore_groups, u16) {
    let mut g = null_mut();
    assert_eq!(commcore_groups_create(256, 64, &mut g), COMMCORE_OK);
    let addresses: Vec<u64> = (0..n as u64).collect();
    let nodes: Vec<u32> = (0..n).map(|i| i / 2).collect();
    let mut pgid = 0;
    let rc = commcore_groups_register(
        g,
        addresses.as_ptr(),
        nodes.as_ptr(),
        null(),
        null(),
        n as usize,
        &mut pgid,
    );
    assert_eq!(rc, COMMCORE_OK);
    (g, pgid)
}

#[test]
fn a_panic_becomes_an_error_code_with_a_detail() {
    let rc = guard(|| panic!("deliberate"));
    assert_eq!(rc, COMMCORE_ERR_PANIC);
    assert!(last_error().contains("deliberate"), "{}", last_error());
}

#[test]
fn null_wrong_type_and_freed_handles_are_errors() {
    let (g, pgid) = groups_with(4);
    let mut map = null_mut();
    assert_eq!(commcore_rankmap_world(g, pgid, &mut map), COMMCORE_OK);
    assert_eq!(commcore_rankmap_translate(map, 3), (pgid as i64) << 32 | 3);
    assert_eq!(commcore_rankmap_translate(null(), 0), -(COMMCORE_ERR_NULL as i64));
    let wrong = g as *const commcore_rankmap;
    assert_eq!(commcore_rankmap_translate(wrong, 0), -(COMMCORE_ERR_HANDLE as i64));
    assert_eq!(commcore_groups_free(g), COMMCORE_ERR_BUSY);
    assert_eq!(commcore_rankmap_free(map), COMMCORE_OK);
    assert_eq!(commcore_rankmap_translate(map, 0), -(COMMCORE_ERR_FREED as i64));
    assert_eq!(commcore_rankmap_free(map), COMMCORE_ERR_FREED);
    assert_eq!(commcore_groups_free(g), COMMCORE_OK);
}

#[test]
fn a_freed_shell_is_reused_only_after_the_quarantine() {
    let mut first = null_mut();
    assert_eq!(commcore_schedule_create(&mut first), COMMCORE_OK);
    assert_eq!(commcore_schedule_free(first), COMMCORE_OK);
    let mut made = Vec::new();
    // Other tests may free schedules concurrently; far fewer than the quarantine.
    for _ in 0..QUARANTINE / 4 {
        let mut s = null_mut();
        assert_eq!(commcore_schedule_create(&mut s), COMMCORE_OK);
        assert_ne!(s, first);
        made.push(s);
    }
    let mut step = commcore_step::default();
    assert_eq!(commcore_schedule_next(first, &mut step), COMMCORE_ERR_FREED);
    for s in made {
        assert_eq!(commcore_schedule_free(s), COMMCORE_OK);
    }
}

#[test]
fn slices_from_c_are_checked() {
    // SAFETY: length 0 and NULL pointers are the cases under test; nothing is read.
    unsafe {
        assert!(handle::slice::<u32>(null(), 0, "x").is_ok());
        assert_eq!(handle::slice::<u32>(null(), 1, "x").unwrap_err().code, COMMCORE_ERR_NULL);
        let p = core::ptr::NonNull::<u64>::dangling().as_ptr();
        let too_long = handle::slice::<u64>(p, usize::MAX / 4, "x").unwrap_err();
        assert_eq!(too_long.code, COMMCORE_ERR_LENGTH);
    }
}

#[test]
fn a_one_member_cid_agreement_finishes() {
    let mut space = null_mut();
    assert_eq!(commcore_cid_space_create(64, 32, 0, &mut space), COMMCORE_OK);
    assert_eq!(commcore_cid_space_claim(space, 0), COMMCORE_OK);
    let mut request = null_mut();
    assert_eq!(
        commcore_cid_request_create(space, COMMCORE_CID_MASK, 0, 0, &mut request),
        COMMCORE_OK
    );
    let mut step = commcore_cid_step::empty(0);
    for _ in 0..10 {
        assert_eq!(commcore_cid_request_poll(request, &mut step), COMMCORE_OK);
        if step.kind == COMMCORE_CID_DONE {
            break;
        }
        let rc = commcore_cid_request_handle_allreduce(request, step.words, step.nwords);
        assert_eq!(rc, COMMCORE_OK);
    }
    assert_eq!((step.kind, step.cid), (COMMCORE_CID_DONE, 1));
    assert_eq!(commcore_cid_request_free(request), COMMCORE_OK);
    assert_eq!(commcore_cid_space_free(space), COMMCORE_OK);
}

#[test]
fn a_schedule_steps_into_a_pod_and_ends() {
    let config = commcore_coll_config {
        rank: 1,
        size: 4,
        remote_size: 0,
        thread_level: COMMCORE_THREAD_SINGLE,
        node_ids: null(),
        remote_node_ids: null(),
        control: c"allreduce:recursive_doubling".as_ptr(),
    };
    let mut coll = null_mut();
    assert_eq!(commcore_coll_create(&config, &mut coll), COMMCORE_OK);
    let mut args = zeroed_args();
    args.coll_op = COMMCORE_COLL_ALLREDUCE;
    args.dtype = COMMCORE_DT_I32;
    args.count = 4;
    let mut schedule = null_mut();
    assert_eq!(commcore_schedule_create(&mut schedule), COMMCORE_OK);
    assert_eq!(commcore_coll_schedule(coll, &args, schedule), COMMCORE_OK);
    assert_eq!(commcore_coll_free(coll), COMMCORE_OK);
    let mut step = commcore_step::default();
    let mut kinds = Vec::new();
    loop {
        assert_eq!(commcore_schedule_next(schedule, &mut step), COMMCORE_OK);
        kinds.push(step.kind);
        if step.kind == COMMCORE_STEP_END {
            break;
        }
    }
    // Two rounds of exchange with a partner, each reduced.
    let count = |k| kinds.iter().filter(|&&x| x == k).count();
    assert_eq!((count(COMMCORE_STEP_SEND), count(COMMCORE_STEP_RECV)), (2, 2));
    assert_eq!(count(COMMCORE_STEP_REDUCE), 2);
    assert_eq!(commcore_schedule_free(schedule), COMMCORE_OK);
}

fn zeroed_args() -> commcore_coll_args {
    commcore_coll_args {
        coll_op: 0,
        dtype: 0,
        reduce_op: 0,
        in_place: 0,
        user_op: null(),
        count: 0,
        root: 0,
        nsend: 0,
        send_counts: null(),
        send_displs: null(),
        nrecv: 0,
        recv_counts: null(),
        recv_displs: null(),
    }
}

#[test]
fn reductions_check_their_operands() {
    let src = [1i32, 2];
    let mut dst = [10i32, 20];
    let bytes = core::mem::size_of_val(&src);
    let (s, d) = (src.as_ptr().cast(), dst.as_mut_ptr().cast());
    assert_eq!(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, s, d, bytes, 1), COMMCORE_OK);
    assert_eq!(dst, [11, 22]);
    let d2 = dst.as_mut_ptr().cast();
    let overlap = commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, d2, d2, bytes, 1);
    assert_eq!(overlap, COMMCORE_ERR_ARG);
    let d3 = dst.as_mut_ptr().cast();
    let unsupported = commcore_reduce(COMMCORE_OP_MINLOC, COMMCORE_DT_I32, s, d3, bytes, 1);
    assert_eq!(unsupported, COMMCORE_ERR_UNSUPPORTED);
}

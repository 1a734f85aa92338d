//! Shared helpers of the collective tests: input data, the reference models and a runner
//! over the simulated executor. (Included by the `coll_*` test files with `mod`.)
#![allow(dead_code)]

use commcore::coll::{reduce, CollOp, Datatype, Op, ReduceOp, UserOp};

/// A non-commutative, associative user operation: u64 elements are affine maps
/// `x -> a x + b` (a in the low half, b in the high half), composed left then right.
pub fn affine(src: &[u8], dst: &mut [u8], _dtype: Datatype, src_left: bool) {
    for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
        let s = u64::from_ne_bytes(s.try_into().unwrap());
        let dv = u64::from_ne_bytes((&*d).try_into().unwrap());
        let (l, r) = if src_left { (s, dv) } else { (dv, s) };
        let (a1, b1) = (l as u32, (l >> 32) as u32);
        let (a2, b2) = (r as u32, (r >> 32) as u32);
        let a = a2.wrapping_mul(a1);
        let b = a2.wrapping_mul(b1).wrapping_add(b2);
        d.copy_from_slice(&((a as u64) | ((b as u64) << 32)).to_ne_bytes());
    }
}

pub const AFFINE: Op = Op::User(UserOp { func: affine, commutative: false });

/// Every valid (op, datatype) pair, plus the user operation on u64.
pub fn op_types() -> Vec<(Op, Datatype)> {
    let mut out = Vec::new();
    for dt in Datatype::ALL {
        for op in ReduceOp::ALL {
            if op.supports(dt) {
                out.push((Op::Builtin(op), dt));
            }
        }
    }
    out.push((AFFINE, Datatype::U64));
    out
}

/// A representative set for large counts: per datatype one arithmetic op (or MINLOC),
/// plus MAXLOC on one pair type, BXOR on one integer type and the user operation.
pub fn op_types_large() -> Vec<(Op, Datatype)> {
    let mut out: Vec<(Op, Datatype)> = Datatype::ALL
        .into_iter()
        .map(|dt| (Op::Builtin(if dt.is_pair() { ReduceOp::MinLoc } else { ReduceOp::Sum }), dt))
        .collect();
    out.push((Op::Builtin(ReduceOp::MaxLoc), Datatype::PairF64I32));
    out.push((Op::Builtin(ReduceOp::Bxor), Datatype::U32));
    out.push((Op::Builtin(ReduceOp::Prod), Datatype::F64));
    out.push((AFFINE, Datatype::U64));
    out
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x
}

/// `count` elements for `rank`, values chosen so every reduction is exact in any order.
pub fn data(dtype: Datatype, op: &Op, rank: usize, count: usize, salt: u64) -> Vec<u8> {
    let size = dtype.size();
    let mut out = vec![0u8; count * size];
    let prod = matches!(op, Op::Builtin(ReduceOp::Prod));
    let mut x = mix(salt ^ ((rank as u64) << 32) ^ 0x9e37) | 1;
    // xorshift64*: cheap enough that generating inputs does not dominate the matrix.
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let small = |h: u64| (h % 9) as i64 - 4;
    let float =
        |h: u64| if prod { [1.0, -1.0, 2.0, 0.5][(h % 4) as usize] } else { small(h) as f64 };
    let index = |h: u64| ((h >> 8) % 5) as i32;
    fn fill(out: &mut [u8], size: usize, mut f: impl FnMut(&mut [u8])) {
        out.chunks_exact_mut(size).for_each(&mut f);
    }
    match dtype {
        Datatype::I8 | Datatype::I16 | Datatype::I32 | Datatype::I64 => {
            fill(&mut out, size, |c| c.copy_from_slice(&next().to_ne_bytes()[..size]))
        }
        Datatype::U8 => fill(&mut out, size, |c| c[0] = (next() % 4) as u8),
        Datatype::U16 | Datatype::U32 | Datatype::U64 => {
            fill(&mut out, size, |c| c.copy_from_slice(&next().to_ne_bytes()[..size]))
        }
        Datatype::F32 => {
            fill(&mut out, size, |c| c.copy_from_slice(&(float(next()) as f32).to_ne_bytes()))
        }
        Datatype::F64 => fill(&mut out, size, |c| c.copy_from_slice(&float(next()).to_ne_bytes())),
        Datatype::PairI16I32 => fill(&mut out, size, |c| {
            let h = next();
            c[..2].copy_from_slice(&(small(h) as i16).to_ne_bytes());
            c[4..8].copy_from_slice(&index(h).to_ne_bytes());
        }),
        Datatype::PairI32I32 => fill(&mut out, size, |c| {
            let h = next();
            c[..4].copy_from_slice(&(small(h) as i32).to_ne_bytes());
            c[4..8].copy_from_slice(&index(h).to_ne_bytes());
        }),
        Datatype::PairF32I32 => fill(&mut out, size, |c| {
            let h = next();
            c[..4].copy_from_slice(&(small(h) as f32).to_ne_bytes());
            c[4..8].copy_from_slice(&index(h).to_ne_bytes());
        }),
        Datatype::PairI64I32 => fill(&mut out, size, |c| {
            let h = next();
            c[..8].copy_from_slice(&small(h).to_ne_bytes());
            c[8..12].copy_from_slice(&index(h).to_ne_bytes());
        }),
        Datatype::PairF64I32 => fill(&mut out, size, |c| {
            let h = next();
            c[..8].copy_from_slice(&(small(h) as f64).to_ne_bytes());
            c[8..12].copy_from_slice(&index(h).to_ne_bytes());
        }),
    }
    out
}

/// The reduction of `inputs` in rank order, computed directly.
pub fn fold(op: &Op, dtype: Datatype, inputs: &[&[u8]]) -> Vec<u8> {
    let mut acc = inputs[0].to_vec();
    for v in &inputs[1..] {
        reduce(op, dtype, v, &mut acc, false).expect("reference reduction");
    }
    acc
}

/// Operations that the matrix covers with a root.
pub fn roots(op: CollOp, size: u32) -> Vec<u32> {
    if op.rooted() {
        (0..size).collect()
    } else {
        vec![0]
    }
}

use commcore::coll::{Algorithm, Blocks, CollArgs, Ctx, Root, Schedule};
use commcore_sim::coll_exec::{run, RankBufs, Stats, Topology};

pub const SENTINEL: u8 = 0xAB;

/// Send counts, send displacements, receive counts, receive displacements of one rank.
type AlltoallvLayout = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);

/// Per-rank varying counts (some zero) and displacements with one-element gaps.
pub fn varying(p: usize, count: usize, salt: usize) -> (Vec<usize>, Vec<usize>) {
    let counts: Vec<usize> = (0..p).map(|i| (i * 7 + salt * 3 + count) % (count + 3)).collect();
    let mut displs = Vec::with_capacity(p);
    let mut at = 0;
    for c in &counts {
        displs.push(at);
        at += c + 1;
    }
    (counts, displs)
}

fn extent(counts: &[usize], displs: &[usize]) -> usize {
    counts.iter().zip(displs).map(|(c, d)| c + d).max().unwrap_or(0)
}

fn place(buf: &mut [u8], at: usize, data: &[u8]) {
    buf[at..at + data.len()].copy_from_slice(data);
}

/// Runs `op` with `alg` on `p` simulated ranks and compares every rank's result with the
/// reference. `Err` describes the first difference.
pub fn check_intra(
    op: CollOp,
    alg: Algorithm,
    p: u32,
    root: u32,
    count: usize,
    rop: Op,
    dt: Datatype,
) -> Result<(), String> {
    let make = maker(move |r, args| {
        Schedule::intra(op, alg, Ctx::new(r, p).unwrap(), args)
            .map_err(|e| format!("schedule: {e}"))
    });
    check_with(op, p, root, count, rop, dt, None, &make).map(|_| ())
}

/// Pins a closure to the higher-ranked signature of [`Make`].
pub fn maker<F>(f: F) -> F
where
    F: for<'a> Fn(u32, &CollArgs<'a>) -> Result<Schedule<'a>, String>,
{
    f
}

/// Builds a rank's schedule from its arguments.
pub type Make<'m> = dyn for<'a> Fn(u32, &CollArgs<'a>) -> Result<Schedule<'a>, String> + 'm;

/// Like [`check_intra`] with schedules from `make`; counts inter-node messages over `nodes`.
#[allow(clippy::too_many_arguments)]
pub fn check_with(
    op: CollOp,
    p: u32,
    root: u32,
    count: usize,
    rop: Op,
    dt: Datatype,
    nodes: Option<&[u32]>,
    make: &Make<'_>,
) -> Result<Stats, String> {
    let pu = p as usize;
    let e = dt.size();
    let d = |r: usize, n: usize| data(dt, &rop, r, n, (count as u64) << 8 | op as u64);
    let (vc, vd) = varying(pu, count, root as usize);
    let per_rank_v: Vec<AlltoallvLayout> = (0..pu)
        .map(|r| {
            let sc: Vec<usize> = (0..pu).map(|j| (r * 3 + j * 5 + count) % (count + 2)).collect();
            let rc: Vec<usize> = (0..pu).map(|j| (j * 3 + r * 5 + count) % (count + 2)).collect();
            let gaps = |c: &[usize]| {
                let mut at = 0;
                c.iter()
                    .map(|c| {
                        let x = at;
                        at += c + 1;
                        x
                    })
                    .collect::<Vec<usize>>()
            };
            let (sd, rd) = (gaps(&sc), gaps(&rc));
            (sc, sd, rc, rd)
        })
        .collect();
    let mut sends: Vec<Vec<u8>> = vec![Vec::new(); pu];
    let mut recv_len = vec![0usize; pu];
    let mut expected: Vec<Option<Vec<u8>>> = vec![None; pu];
    let mut init_recv: Vec<Option<Vec<u8>>> = vec![None; pu];
    let all: Vec<Vec<u8>> = (0..pu).map(|r| d(r, count)).collect();
    let refs = |v: &[Vec<u8>]| v.iter().map(|x| x.to_vec()).collect::<Vec<_>>();
    let folded = |v: &[Vec<u8>]| {
        let r: Vec<&[u8]> = v.iter().map(|x| x.as_slice()).collect();
        fold(&rop, dt, &r)
    };
    let ru = root as usize;
    match op {
        CollOp::Barrier => {}
        CollOp::Bcast => {
            for r in 0..pu {
                recv_len[r] = count * e;
                expected[r] = Some(all[ru].clone());
            }
            init_recv[ru] = Some(all[ru].clone());
        }
        CollOp::Reduce | CollOp::Allreduce => {
            let f = folded(&all);
            for r in 0..pu {
                sends[r] = all[r].clone();
                recv_len[r] = count * e;
                if op == CollOp::Allreduce || r == ru {
                    expected[r] = Some(f.clone());
                }
            }
        }
        CollOp::Scan | CollOp::Exscan => {
            for r in 0..pu {
                sends[r] = all[r].clone();
                recv_len[r] = count * e;
                expected[r] = if op == CollOp::Scan {
                    Some(folded(&all[..=r]))
                } else if r > 0 {
                    Some(folded(&all[..r]))
                } else {
                    None
                };
            }
        }
        CollOp::Allgather | CollOp::Gather => {
            let cat: Vec<u8> = refs(&all).concat();
            for r in 0..pu {
                sends[r] = all[r].clone();
                recv_len[r] = if op == CollOp::Allgather || r == ru { pu * count * e } else { 0 };
                if op == CollOp::Allgather || r == ru {
                    expected[r] = Some(cat.clone());
                }
            }
        }
        CollOp::Allgatherv | CollOp::Gatherv => {
            let len = extent(&vc, &vd) * e;
            let mut want = vec![SENTINEL; len];
            for r in 0..pu {
                sends[r] = d(r, vc[r]);
                place(&mut want, vd[r] * e, &sends[r]);
            }
            for r in 0..pu {
                if op == CollOp::Allgatherv || r == ru {
                    recv_len[r] = len;
                    expected[r] = Some(want.clone());
                }
            }
        }
        CollOp::Scatter => {
            sends[ru] = refs(&all).concat();
            for r in 0..pu {
                recv_len[r] = count * e;
                expected[r] = Some(all[r].clone());
            }
        }
        CollOp::Scatterv => {
            let mut buf = vec![SENTINEL; extent(&vc, &vd) * e];
            for r in 0..pu {
                let blk = d(r, vc[r]);
                place(&mut buf, vd[r] * e, &blk);
                recv_len[r] = vc[r] * e;
                expected[r] = Some(blk);
            }
            sends[ru] = buf;
        }
        CollOp::Alltoall => {
            for r in 0..pu {
                sends[r] = (0..pu).map(|j| d(r * pu + j, count)).collect::<Vec<_>>().concat();
                recv_len[r] = pu * count * e;
                expected[r] =
                    Some((0..pu).map(|j| d(j * pu + r, count)).collect::<Vec<_>>().concat());
            }
        }
        CollOp::Alltoallv => {
            for r in 0..pu {
                let (sc, sd, rc, rd) = &per_rank_v[r];
                let mut s = vec![SENTINEL; extent(sc, sd) * e];
                let mut w = vec![SENTINEL; extent(rc, rd) * e];
                for j in 0..pu {
                    place(&mut s, sd[j] * e, &d(r * pu + j, sc[j]));
                    place(&mut w, rd[j] * e, &d(j * pu + r, rc[j]));
                }
                sends[r] = s;
                recv_len[r] = w.len();
                expected[r] = Some(w);
            }
        }
        CollOp::ReduceScatterBlock | CollOp::ReduceScatter => {
            let (c, dsp): (Vec<usize>, Vec<usize>) = if op == CollOp::ReduceScatterBlock {
                (vec![count; pu], (0..pu).map(|i| i * count).collect())
            } else {
                (vc.clone(), vd.clone())
            };
            let total = extent(&c, &dsp);
            let inputs: Vec<Vec<u8>> = (0..pu).map(|r| d(r, total)).collect();
            let f = folded(&inputs);
            for r in 0..pu {
                sends[r] = inputs[r].clone();
                recv_len[r] = c[r] * e;
                expected[r] = Some(f[dsp[r] * e..(dsp[r] + c[r]) * e].to_vec());
            }
        }
    }
    let mut bufs: Vec<RankBufs> = (0..pu)
        .map(|r| RankBufs {
            send: std::mem::take(&mut sends[r]),
            recv: init_recv[r].take().unwrap_or_else(|| vec![SENTINEL; recv_len[r]]),
            scratch: Vec::new(),
        })
        .collect();
    let rc_block = Blocks { counts: &vc, displs: &vd };
    let schedules: Result<Vec<Schedule<'_>>, _> = (0..p)
        .map(|r| {
            let mut args = CollArgs::new(count, dt).with_op(rop).with_root(Root::Rank(root));
            match op {
                CollOp::Allgatherv | CollOp::Gatherv | CollOp::ReduceScatter => {
                    args = args.with_recv(rc_block)
                }
                CollOp::Scatterv => args = args.with_send(rc_block),
                CollOp::Alltoallv => {
                    let (sc, sd, rc, rd) = &per_rank_v[r as usize];
                    args = args
                        .with_send(Blocks { counts: sc, displs: sd })
                        .with_recv(Blocks { counts: rc, displs: rd });
                }
                _ => {}
            }
            make(r, &args)
        })
        .collect();
    let schedules = schedules?;
    let stats = run(Topology::Intra { size: pu }, schedules, &mut bufs, nodes)
        .map_err(|e| format!("run: {e}"))?;
    let waits_for_all = matches!(
        op,
        CollOp::Barrier
            | CollOp::Allreduce
            | CollOp::Allgather
            | CollOp::Allgatherv
            | CollOp::Alltoall
            | CollOp::Alltoallv
            | CollOp::ReduceScatter
            | CollOp::ReduceScatterBlock
    );
    check_outcome(&stats, waits_for_all, &bufs, &expected)?;
    Ok(stats)
}

/// Checks a finished run: when `waits_for_all` (the result on every rank depends on every
/// rank, so every rank's start must come before every rank's end: all a barrier does), that
/// every rank heard of every other; then every rank's receive buffer against `expected`.
pub fn check_outcome(
    stats: &Stats,
    waits_for_all: bool,
    bufs: &[RankBufs],
    expected: &[Option<Vec<u8>>],
) -> Result<(), String> {
    if waits_for_all && stats.min_causal != bufs.len() {
        return Err(format!("a rank finished having heard of only {} ranks", stats.min_causal));
    }
    for (r, (buf, want)) in bufs.iter().zip(expected).enumerate() {
        let Some(want) = want else { continue };
        if &buf.recv != want {
            let at = buf.recv.iter().zip(want).position(|(a, b)| a != b);
            return Err(format!(
                "rank {r} differs at byte {at:?} (len {} vs {})",
                buf.recv.len(),
                want.len()
            ));
        }
    }
    Ok(())
}

/// Ends a matrix test: at least `at_least` cases ran and none failed (the first 20 failures
/// are shown).
pub fn assert_cases(checked: usize, at_least: usize, failures: &[String]) {
    eprintln!("{checked} cases checked");
    assert!(checked > at_least, "only {checked} cases ran");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// The flat algorithms of `op`.
pub fn algorithms(op: CollOp) -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| a.implements(op) && *a != Algorithm::Hierarchical)
        .collect()
}

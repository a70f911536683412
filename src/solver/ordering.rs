//! Fill-reducing order of the loop part of the constraint graph (phase 2 of
//! `BlockLdl::analyze`) and the exact column
//! structures of L that it implies.
//!
//! What is left after the leaf peeling of phase 1 (the loops and the paths between
//! them) is ordered by approximate minimum degree — SuiteSparse's AMD (Amestoy,
//! Davis & Duff: quotient graph, approximate external degrees, element absorption,
//! supervariables and mass elimination) as ported by `faer` — on the graph whose
//! nodes are constraints (one node per 3×3 block, so AMD's cost is that of the block
//! graph, not of the scalar one). Issue 10 measured the crate's former hand-written
//! minimum degree (no supervariables, no mass elimination) on the 100 × 100 grid:
//! 1.82 M scalar entries in L, against 0.86 M with this order and 0.82 M for faer's
//! AMD on the scalar matrix.
//!
//! AMD returns an order only; the structure of each column of L is then computed
//! exactly on the elimination tree: struct(j) = {k adjacent to j, later than j} ∪
//! ⋃ over the children c of j of struct(c) ∖ {j} (the columns eliminated by the
//! leaf peeling need not be visited: their structures are cliques of A already).
//! AMD's order is a postorder of its assembly tree, so the columns of a supernode
//! come out consecutive (supernodes, module `supernodal`).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::SymbolicSparseColMatRef;
use faer::sparse::linalg::amd;

/// Orders the constraints not yet `eliminated` (all marked eliminated on return),
/// appending them to `order` and their column structures (constraint ids, the
/// ones eliminated later) to `col_c` / `col_c_ptr`. `adj_ptr` / `adj`: the
/// constraint graph (CSR, both directions, no self loops).
pub(crate) fn order_rest(
    adj_ptr: &[u32],
    adj: &[u32],
    eliminated: &mut [bool],
    order: &mut Vec<u32>,
    col_c_ptr: &mut Vec<u32>,
    col_c: &mut Vec<u32>,
) {
    const NIL: u32 = u32::MAX;
    let n = eliminated.len();
    // local numbering of the constraints left
    let glob: Vec<u32> = (0..n as u32).filter(|&c| !eliminated[c as usize]).collect();
    let m = glob.len();
    if m == 0 {
        return;
    }
    let mut loc = vec![NIL; n];
    for (k, &c) in glob.iter().enumerate() {
        loc[c as usize] = k as u32;
    }
    // the subgraph as a symmetric pattern (CSC, sorted rows, no diagonal)
    let mut col_ptr = Vec::with_capacity(m + 1);
    let mut row_idx: Vec<usize> = Vec::new();
    col_ptr.push(0usize);
    for &c in &glob {
        let start = row_idx.len();
        let c = c as usize;
        row_idx.extend(
            adj[adj_ptr[c] as usize..adj_ptr[c + 1] as usize]
                .iter()
                .filter(|&&d| loc[d as usize] != NIL)
                .map(|&d| loc[d as usize] as usize),
        );
        row_idx[start..].sort_unstable();
        col_ptr.push(row_idx.len());
    }
    let mut perm = vec![0usize; m];
    let mut perm_inv = vec![0usize; m];
    let pattern = SymbolicSparseColMatRef::new_checked(m, m, &col_ptr, None, &row_idx);
    let mut mem = MemBuffer::new(amd::order_scratch::<usize>(m, row_idx.len()));
    if amd::order(&mut perm, &mut perm_inv, pattern, amd::Control::default(), MemStack::new(&mut mem)).is_err() {
        // AMD's only error is an index overflow of its workspace, impossible here:
        // the graph has fewer than 2³² nodes and edges and AMD indexes with usize.
        // The natural order is still a valid (if fill-heavy) order.
        for (k, p) in perm.iter_mut().enumerate() {
            *p = k;
        }
        for (k, p) in perm_inv.iter_mut().enumerate() {
            *p = k;
        }
    }
    // exact column structures on the elimination tree, in elimination order
    // (positions here are local: perm_inv[local] = step)
    let mut children_head = vec![NIL; m];
    let mut next_child = vec![NIL; m];
    let mut struct_ptr: Vec<usize> = Vec::with_capacity(m + 1);
    let mut structs: Vec<u32> = Vec::new(); // local steps, as the union is formed
    struct_ptr.push(0);
    let mut mark = vec![NIL; m];
    for (step, &l) in perm.iter().enumerate() {
        let start = structs.len();
        mark[step] = step as u32;
        let c = glob[l] as usize;
        for &d in &adj[adj_ptr[c] as usize..adj_ptr[c + 1] as usize] {
            let ld = loc[d as usize];
            if ld == NIL {
                continue;
            }
            let sd = perm_inv[ld as usize];
            if sd > step && mark[sd] != step as u32 {
                mark[sd] = step as u32;
                structs.push(sd as u32);
            }
        }
        let mut ch = children_head[step];
        while ch != NIL {
            let chu = ch as usize;
            for k in struct_ptr[chu]..struct_ptr[chu + 1] {
                let q = structs[k] as usize;
                if mark[q] != step as u32 {
                    mark[q] = step as u32;
                    structs.push(q as u32);
                }
            }
            ch = next_child[chu];
        }
        struct_ptr.push(structs.len());
        // parent: the earliest later step in the structure
        if let Some(&parent) = structs[start..].iter().min() {
            next_child[step] = children_head[parent as usize];
            children_head[parent as usize] = step as u32;
        }
        order.push(glob[l]);
        col_c.extend(structs[start..].iter().map(|&q| glob[perm[q as usize]]));
        col_c_ptr.push(col_c.len() as u32);
    }
    for &c in &glob {
        eliminated[c as usize] = true;
    }
}

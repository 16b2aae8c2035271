//! Every differentiable operation of the Rust API against central finite differences in float64
//! (the oracle is `common::check_fd`: `d/dx sum(f(x) * w)` with fixed pseudo-random weights `w`).
//! Each test states the math it checks; broadcast operands and non-contiguous inputs (transposed,
//! sliced, expanded) are covered beside the plain case.

mod common;
use common::*;
use tapegrad::ops::IndexItem;
use tapegrad::{DType, Tensor};

fn sl(start: Option<isize>, stop: Option<isize>, step: isize) -> IndexItem {
    IndexItem::Slice { start, stop, step }
}

// ---------------------------------------------------------------- binary arithmetic

#[test]
fn add_sub_same_shape_and_broadcast() {
    // d(a+b)/da = 1, d(a-b)/db = -1; broadcast operands sum the gradient over the broadcast dims.
    let a = rand_leaf(&[2, 3], 1);
    let b = rand_leaf(&[2, 3], 2);
    check_fd("add", |t| t[0].add(&t[1]), &[a.clone(), b.clone()]);
    check_fd("sub", |t| t[0].sub(&t[1]), &[a.clone(), b]);
    let row = rand_leaf(&[3], 3);
    let col = rand_leaf(&[2, 1], 4);
    check_fd("add [2,3]+[3]", |t| t[0].add(&t[1]), &[a.clone(), row.clone()]);
    check_fd("sub [2,1]-[3]", |t| t[0].sub(&t[1]), &[col.clone(), row.clone()]);
    let s = rand_leaf(&[], 5);
    check_fd("sub [2,3]-[]", |t| t[0].sub(&t[1]), &[a, s]);
}

#[test]
fn mul_div_with_broadcast() {
    // d(ab)/da = b; d(a/b)/da = 1/b, d(a/b)/db = -a/b^2.
    let a = rand_leaf(&[2, 3], 6);
    let b = leaf_in(&[2, 3], 7, 0.5, 2.0);
    check_fd("mul", |t| t[0].mul(&t[1]), &[a.clone(), b.clone()]);
    check_fd("div", |t| t[0].div(&t[1]), &[a.clone(), b]);
    let col = leaf_in(&[2, 1], 8, 0.5, 2.0);
    let row = leaf_in(&[1, 3], 9, -2.0, -0.5);
    check_fd("mul [2,1]*[1,3]", |t| t[0].mul(&t[1]), &[col.clone(), row.clone()]);
    check_fd("div [2,3]/[2,1]", |t| t[0].div(&t[1]), &[a.clone(), col]);
    check_fd("div [1,3]/[2,3]", |t| t[1].div(&t[0]), &[a, row]);
}

#[test]
fn pow_tensor_tensor() {
    // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b ln a (a > 0).
    let a = leaf_in(&[2, 3], 10, 0.5, 2.0);
    let b = leaf_in(&[2, 3], 11, -1.5, 2.5);
    check_fd("pow", |t| t[0].pow(&t[1]), &[a.clone(), b]);
    let e = leaf_in(&[3], 12, 0.5, 3.0);
    check_fd("pow [2,3]^[3]", |t| t[0].pow(&t[1]), &[a, e]);
}

#[test]
fn binary_on_non_contiguous_inputs() {
    // The same formulas with transposed and sliced operands.
    let a = rand_leaf(&[3, 2], 13);
    let b = leaf_in(&[2, 3], 14, 0.5, 2.0);
    check_fd("mul a.t()*b", |t| t[0].t()?.mul(&t[1]), &[a.clone(), b.clone()]);
    check_fd("div a.t()/b", |t| t[0].t()?.div(&t[1]), &[a.clone(), b.clone()]);
    let wide = rand_leaf(&[2, 6], 15);
    check_fd(
        "add of a strided slice",
        |t| t[0].index(&[sl(None, None, 1), sl(Some(1), None, 2)])?.add(&t[1]),
        &[wide, b.clone()],
    );
    check_fd("pow of a transposed base", |t| t[0].t()?.abs()?.add_scalar(0.5)?.pow(&t[1]), &[a, b]);
}

#[test]
fn mixed_dtypes_give_gradients_in_each_inputs_dtype() {
    // float32 * float64 computes in float64; each gradient comes back in its input's dtype.
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().requires_grad_(true).unwrap();
    let b = leaf(&[4.0, 5.0, 6.0], &[3]);
    let y = a.mul(&b).unwrap();
    assert_eq!(y.dtype(), DType::Float64);
    y.sum(None, false).unwrap().backward_default().unwrap();
    let ga = a.grad().unwrap();
    assert_eq!(ga.dtype(), DType::Float32);
    assert_eq!(ga.to_vec::<f32>().unwrap(), vec![4.0, 5.0, 6.0]);
    assert_eq!(b.grad().unwrap().to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0]);
}

// ---------------------------------------------------------------- scalar variants

#[test]
fn scalar_variants() {
    // x+s, x-s, s-x, x*s, x/s, s/x, x^s, s^x.
    let x = leaf_in(&[2, 3], 16, 0.5, 2.0);
    check_fd("add_scalar", |t| t[0].add_scalar(1.5), std::slice::from_ref(&x));
    check_fd("sub_scalar", |t| t[0].sub_scalar(1.5), std::slice::from_ref(&x));
    check_fd("rsub_scalar", |t| t[0].rsub_scalar(1.5), std::slice::from_ref(&x));
    check_fd("mul_scalar", |t| t[0].mul_scalar(-2.5), std::slice::from_ref(&x));
    check_fd("div_scalar", |t| t[0].div_scalar(4.0), std::slice::from_ref(&x));
    check_fd("rdiv_scalar", |t| t[0].rdiv_scalar(3.0), std::slice::from_ref(&x));
    check_fd("pow_scalar 3", |t| t[0].pow_scalar(3.0), std::slice::from_ref(&x));
    check_fd("pow_scalar -0.5", |t| t[0].pow_scalar(-0.5), std::slice::from_ref(&x));
    check_fd("pow_scalar int 2", |t| t[0].pow_scalar(2i64), std::slice::from_ref(&x));
    check_fd("rpow_scalar", |t| t[0].rpow_scalar(1.7), std::slice::from_ref(&x));
    check_fd("mul_scalar on a transpose", |t| t[0].t()?.mul_scalar(3.0), &[x]);
}

// ---------------------------------------------------------------- unary

#[test]
fn unary_smooth() {
    // neg: -1; exp: e^x; sin: cos x; cos: -sin x; tanh: 1-tanh^2; sigmoid: s(1-s).
    let x = rand_leaf(&[2, 3], 17);
    check_fd("neg", |t| t[0].neg(), std::slice::from_ref(&x));
    check_fd("exp", |t| t[0].exp(), std::slice::from_ref(&x));
    check_fd("sin", |t| t[0].sin(), std::slice::from_ref(&x));
    check_fd("cos", |t| t[0].cos(), std::slice::from_ref(&x));
    check_fd("tanh", |t| t[0].tanh(), std::slice::from_ref(&x));
    check_fd("sigmoid", |t| t[0].sigmoid(), std::slice::from_ref(&x));
    check_fd("exp of a transpose", |t| t[0].t()?.exp(), std::slice::from_ref(&x));
    check_fd("tanh of a slice", |t| t[0].index(&[IndexItem::Int(1), sl(None, None, 2)])?.tanh(), &[x]);
}

#[test]
fn unary_positive_domain() {
    // log: 1/x; sqrt: 1/(2 sqrt x).
    let x = leaf_in(&[3, 2], 18, 0.3, 3.0);
    check_fd("log", |t| t[0].log(), std::slice::from_ref(&x));
    check_fd("sqrt", |t| t[0].sqrt(), std::slice::from_ref(&x));
    check_fd("log of a transpose", |t| t[0].t()?.log(), std::slice::from_ref(&x));
    check_fd("sqrt of a narrow", |t| t[0].narrow(0, 1, 2)?.sqrt(), &[x]);
}

#[test]
fn unary_piecewise() {
    // abs: sign x; relu: [x > 0]; sign: 0 (away from the kinks, which the random values avoid).
    let x = rand_leaf(&[4, 3], 19);
    check_fd("abs", |t| t[0].abs(), std::slice::from_ref(&x));
    check_fd("relu", |t| t[0].relu(), std::slice::from_ref(&x));
    check_fd("sign", |t| t[0].sign()?.mul(&t[0]), std::slice::from_ref(&x));
    check_fd("relu of a transpose", |t| t[0].t()?.relu(), &[x]);
}

#[test]
fn clamp_bounds() {
    // clamp: 1 inside [min, max], 0 outside; with one bound, one-sided.
    let x = leaf_in(&[3, 4], 20, -2.0, 2.0);
    check_fd("clamp both", |t| t[0].clamp(Some(-0.7), Some(0.9)), std::slice::from_ref(&x));
    check_fd("clamp min", |t| t[0].clamp(Some(-0.3), None), std::slice::from_ref(&x));
    check_fd("clamp max", |t| t[0].clamp(None, Some(0.2)), std::slice::from_ref(&x));
    check_fd("clamp of a transpose", |t| t[0].t()?.clamp(Some(-1.0), Some(1.0)), &[x]);
}

// ---------------------------------------------------------------- linear algebra

#[test]
fn mm_plain_and_non_contiguous() {
    // d(AB)/dA = G B^T, d(AB)/dB = A^T G.
    let a = rand_leaf(&[3, 4], 21);
    let b = rand_leaf(&[4, 2], 22);
    check_fd("mm", |t| t[0].mm(&t[1]), &[a.clone(), b.clone()]);
    let at = rand_leaf(&[4, 3], 23);
    check_fd("mm A^T B", |t| t[0].t()?.mm(&t[1]), &[at, b.clone()]);
    let bt = rand_leaf(&[2, 4], 24);
    check_fd("mm A B^T", |t| t[0].mm(&t[1].t()?), &[a.clone(), bt]);
    let wide = rand_leaf(&[3, 8], 25);
    check_fd("mm of a column slice", |t| t[0].index(&[sl(None, None, 1), sl(None, None, 2)])?.mm(&t[1]), &[wide, b]);
    // A 0-size inner dimension: the product is zeros, the gradients are empty.
    let e1 = rand_leaf(&[2, 0], 26);
    let e2 = rand_leaf(&[0, 3], 27);
    check_fd("mm with k = 0", |t| t[0].mm(&t[1]), &[e1, e2]);
}

#[test]
fn matmul_all_ranks() {
    let v = rand_leaf(&[4], 28);
    let w = rand_leaf(&[4], 29);
    let m = rand_leaf(&[4, 3], 30);
    let m2 = rand_leaf(&[2, 4], 31);
    check_fd("matmul 1d@1d", |t| t[0].matmul(&t[1]), &[v.clone(), w]);
    check_fd("matmul 1d@2d", |t| t[0].matmul(&t[1]), &[v.clone(), m.clone()]);
    check_fd("matmul 2d@1d", |t| t[0].matmul(&t[1]), &[m2.clone(), v.clone()]);
    let b3 = rand_leaf(&[2, 3, 4], 32);
    check_fd("matmul 3d@2d", |t| t[0].matmul(&t[1]), &[b3.clone(), m.clone()]);
    check_fd("matmul 3d@1d", |t| t[0].matmul(&t[1]), &[b3.clone(), v]);
    let c3 = rand_leaf(&[2, 4, 2], 33);
    check_fd("matmul batched 3d@3d", |t| t[0].matmul(&t[1]), &[b3.clone(), c3]);
    // Broadcast batch dims: [2,1,3,4] @ [3,4,2] -> [2,3,3,2].
    let a4 = rand_leaf(&[2, 1, 3, 4], 34);
    let c = rand_leaf(&[3, 4, 2], 35);
    check_fd("matmul broadcast batch", |t| t[0].matmul(&t[1]), &[a4, c]);
    // 2d @ 3d broadcasts the matrix over the batch.
    check_fd("matmul 2d@3d", |t| t[0].matmul(&t[1]), &[m2, rand_leaf(&[3, 4, 2], 36)]);
    // Non-contiguous batched operands.
    let p = rand_leaf(&[4, 2, 3], 37);
    check_fd("matmul of transposed batches", |t| t[0].transpose(0, 2)?.matmul(&t[1]), &[p, rand_leaf(&[3, 4, 5], 38)]);
}

#[test]
fn bmm_batched() {
    let a = rand_leaf(&[2, 3, 4], 39);
    let b = rand_leaf(&[2, 4, 2], 40);
    check_fd("bmm", |t| t[0].bmm(&t[1]), &[a, b]);
}

// ---------------------------------------------------------------- shape

#[test]
fn transpose_and_permute() {
    let x = rand_leaf(&[2, 3, 4], 41);
    check_fd("transpose(0,2)", |t| t[0].transpose(0, 2)?.mul_scalar(2.0), std::slice::from_ref(&x));
    check_fd("transpose(-1,-2)", |t| t[0].transpose(-1, -2), std::slice::from_ref(&x));
    check_fd("permute", |t| t[0].permute(&[2, 0, 1]), std::slice::from_ref(&x));
    check_fd("t", |t| t[0].t(), &[rand_leaf(&[3, 5], 42)]);
}

#[test]
fn reshape_view_flatten() {
    let x = rand_leaf(&[2, 3, 4], 43);
    check_fd("reshape", |t| t[0].reshape(&[4, -1]), std::slice::from_ref(&x));
    check_fd("view", |t| t[0].view(&[6, 4]), std::slice::from_ref(&x));
    check_fd("flatten", |t| t[0].flatten(1, 2), std::slice::from_ref(&x));
    // reshape of a transpose must copy (and still route the gradient back through the transpose).
    check_fd("reshape of a transpose", |t| t[0].transpose(0, 2)?.reshape(&[-1]), std::slice::from_ref(&x));
    check_fd("reshape to 0-d and back", |t| t[0].sum(None, false)?.reshape(&[1, 1]), &[x]);
}

#[test]
fn unsqueeze_squeeze_expand() {
    let x = rand_leaf(&[3, 1, 2], 44);
    check_fd("unsqueeze", |t| t[0].unsqueeze(1), std::slice::from_ref(&x));
    check_fd("unsqueeze(-1)", |t| t[0].unsqueeze(-1), std::slice::from_ref(&x));
    check_fd("squeeze", |t| t[0].squeeze(), std::slice::from_ref(&x));
    check_fd("squeeze_dim", |t| t[0].squeeze_dim(1), std::slice::from_ref(&x));
    // expand: the gradient sums over the broadcast dimension (and new leading ones).
    check_fd("expand", |t| t[0].expand(&[3, 5, 2]), std::slice::from_ref(&x));
    check_fd("expand with a new leading dim", |t| t[0].expand(&[2, 3, 4, 2]), std::slice::from_ref(&x));
    check_fd("expand_signed", |t| t[0].expand_signed(&[-1, 4, -1]), std::slice::from_ref(&x));
    let target = Tensor::zeros(&[3, 2, 2], DType::Float64).unwrap();
    check_fd("expand_as", |t| t[0].expand_as(&target), std::slice::from_ref(&x));
    check_fd("expand of a 0-d", |t| t[0].expand(&[2, 3]), &[rand_leaf(&[], 45)]);
}

#[test]
fn narrow_clone_contiguous() {
    let x = rand_leaf(&[4, 3], 46);
    check_fd("narrow", |t| t[0].narrow(0, 1, 2), std::slice::from_ref(&x));
    check_fd("narrow last dim", |t| t[0].narrow(-1, 2, 1), std::slice::from_ref(&x));
    check_fd("clone_tensor", |t| t[0].clone_tensor()?.mul(&t[0]), std::slice::from_ref(&x));
    check_fd("contiguous of a transpose", |t| t[0].t()?.contiguous(), &[x]);
}

#[test]
fn cat_and_stack() {
    let a = rand_leaf(&[2, 3], 47);
    let b = rand_leaf(&[1, 3], 48);
    let c = rand_leaf(&[2, 3], 49);
    check_fd("cat dim 0", |t| Tensor::cat(&[t[0].clone(), t[1].clone()], 0), &[a.clone(), b.clone()]);
    check_fd("cat dim -1", |t| Tensor::cat(&[t[0].clone(), t[1].clone()], -1), &[a.clone(), c.clone()]);
    check_fd(
        "cat of a transpose",
        |t| Tensor::cat(&[t[0].t()?, t[1].clone()], 1),
        &[rand_leaf(&[3, 2], 50), c.clone()],
    );
    check_fd(
        "cat with an empty part",
        |t| Tensor::cat(&[t[0].clone(), t[1].clone()], 0),
        &[a.clone(), rand_leaf(&[0, 3], 51)],
    );
    check_fd("stack dim 0", |t| Tensor::stack(&[t[0].clone(), t[1].clone()], 0), &[a.clone(), c.clone()]);
    check_fd("stack dim -1", |t| Tensor::stack(&[t[0].clone(), t[1].clone(), t[0].clone()], -1), &[a, c]);
}

#[test]
fn to_dtype_and_back() {
    // to(float32) and back: the gradient is cast back (the derivative is 1 up to float32 rounding).
    let x = rand_leaf(&[2, 3], 52);
    check_fd_with(
        "to_dtype f64->f32->f64",
        Fd { eps: 1e-3, atol: 1e-4, rtol: 1e-4 },
        |t| t[0].to_dtype(DType::Float32)?.mul_scalar(3.0)?.to_dtype(DType::Float64),
        std::slice::from_ref(&x),
    );
    check_fd("to_dtype to the same dtype", |t| t[0].to_dtype(DType::Float64)?.exp(), &[x]);
}

// ---------------------------------------------------------------- reductions

#[test]
fn sum_dims_keepdim() {
    let x = rand_leaf(&[2, 3, 4], 53);
    check_fd("sum all", |t| t[0].sum(None, false), std::slice::from_ref(&x));
    check_fd("sum all keepdim", |t| t[0].sum(None, true), std::slice::from_ref(&x));
    check_fd("sum dim 1", |t| t[0].sum(Some(&[1]), false), std::slice::from_ref(&x));
    check_fd("sum dims 0,2 keepdim", |t| t[0].sum(Some(&[0, 2]), true), std::slice::from_ref(&x));
    check_fd("sum dim -1", |t| t[0].sum(Some(&[-1]), false), std::slice::from_ref(&x));
    check_fd("sum of a transpose", |t| t[0].transpose(0, 2)?.sum(Some(&[0]), false), std::slice::from_ref(&x));
    check_fd("sum of an empty tensor", |t| t[0].sum(None, false), &[rand_leaf(&[0, 3], 54)]);
    check_fd("sum over a 0-size dim", |t| t[0].sum(Some(&[0]), false), &[rand_leaf(&[0, 3], 55)]);
    check_fd("sum of a 0-d", |t| t[0].sum(None, false), &[rand_leaf(&[], 56)]);
}

#[test]
fn mean_dims_keepdim() {
    let x = rand_leaf(&[2, 3, 4], 57);
    check_fd("mean all", |t| t[0].mean(None, false), std::slice::from_ref(&x));
    check_fd("mean dim 2", |t| t[0].mean(Some(&[2]), false), std::slice::from_ref(&x));
    check_fd("mean dims 0,1 keepdim", |t| t[0].mean(Some(&[0, 1]), true), std::slice::from_ref(&x));
    check_fd("mean of a slice", |t| t[0].index(&[sl(None, None, 2)])?.mean(Some(&[-1]), true), &[x]);
}

#[test]
fn max_all_and_dim() {
    // The gradient goes to the (unique) largest element.
    let x = rand_leaf(&[3, 4], 58);
    check_fd("max_all", |t| t[0].max_all(), std::slice::from_ref(&x));
    check_fd("max_dim 0", |t| Ok(t[0].max_dim(0, false)?.0), std::slice::from_ref(&x));
    check_fd("max_dim 1 keepdim", |t| Ok(t[0].max_dim(1, true)?.0), std::slice::from_ref(&x));
    check_fd("max_dim -1 of a transpose", |t| Ok(t[0].t()?.max_dim(-1, false)?.0), std::slice::from_ref(&x));
    check_fd("max_dim of a 0-d", |t| Ok(t[0].max_dim(0, false)?.0), &[rand_leaf(&[], 59)]);
    let (_, idx) = x.max_dim(1, false).unwrap();
    assert_eq!(idx.dtype(), DType::Int64);
    assert!(!idx.requires_grad());
}

#[test]
fn gather_along_dim() {
    let x = rand_leaf(&[3, 4], 60);
    let idx = Tensor::from_vec(vec![0i64, 3, 3, 1, 2, 0], &[3, 2]).unwrap();
    check_fd("gather dim 1 (repeated index)", |t| t[0].gather(1, &idx), &[x]);
}

// ---------------------------------------------------------------- indexing

#[test]
fn basic_indexing() {
    let x = rand_leaf(&[3, 4, 2], 61);
    check_fd("x[1]", |t| t[0].index(&[IndexItem::Int(1)]), std::slice::from_ref(&x));
    check_fd("x[-1, 2]", |t| t[0].index(&[IndexItem::Int(-1), IndexItem::Int(2)]), std::slice::from_ref(&x));
    check_fd("x[::2, 1:3]", |t| t[0].index(&[sl(None, None, 2), sl(Some(1), Some(3), 1)]), std::slice::from_ref(&x));
    check_fd(
        "x[None, ..., 0]",
        |t| t[0].index(&[IndexItem::NewAxis, IndexItem::Ellipsis, IndexItem::Int(0)]),
        std::slice::from_ref(&x),
    );
    check_fd("x[5:] (empty)", |t| t[0].index(&[sl(Some(5), None, 1)]), std::slice::from_ref(&x));
    check_fd("x.t() indexed", |t| t[0].index(&[IndexItem::Int(0)])?.t()?.index(&[sl(Some(1), None, 1)]), &[x]);
}

#[test]
fn mask_indexing_and_where() {
    let x = rand_leaf(&[3, 4], 62);
    let mask = x.detach().gt_scalar(0.0).unwrap();
    check_fd("x[mask]", |t| t[0].index(&[IndexItem::Mask(mask.clone())]), std::slice::from_ref(&x));
    let rows = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    check_fd("x[row mask]", |t| t[0].masked_select(&rows), std::slice::from_ref(&x));
    let y = rand_leaf(&[4], 63);
    check_fd("where(mask, x, y)", |t| Tensor::where_(&mask, &t[0], &t[1]), &[x.clone(), y]);
    let count = mask.to_vec::<bool>().unwrap().iter().filter(|&&b| b).count();
    let v = rand_leaf(&[count], 64);
    check_fd("masked_scatter", |t| t[0].masked_scatter(&mask, &t[1]), &[x, v]);
}

// ---------------------------------------------------------------- in-place writes inside a graph

#[test]
fn inplace_arithmetic_on_non_leaves() {
    // y = x*2; y += b; y *= x  ->  (2x + b) x.
    let x = rand_leaf(&[2, 3], 65);
    let b = rand_leaf(&[3], 66);
    check_fd(
        "add_/mul_ on a non-leaf",
        |t| {
            let y = t[0].mul_scalar(2.0)?;
            y.add_(&t[1])?;
            y.mul_(&t[0])?;
            Ok(y)
        },
        &[x.clone(), b],
    );
    check_fd(
        "scalar in-place and clamp_",
        |t| {
            // (exp saves its output, so the in-place chain starts from a copy of it.)
            let y = t[0].exp()?.mul_scalar(1.0)?;
            y.sub_scalar_(1.0)?;
            y.div_scalar_(2.0)?;
            y.clamp_(Some(-0.2), Some(0.6))?;
            Ok(y)
        },
        &[x],
    );
}

#[test]
fn inplace_through_views_rebase_the_base() {
    // Writing through a view changes the base; the base's gradient must see it (CopySlices).
    let x = rand_leaf(&[3, 4], 67);
    let s = rand_leaf(&[4], 68);
    check_fd(
        "mul_ through a row view",
        |t| {
            let y = t[0].mul_scalar(1.0)?;
            y.index(&[IndexItem::Int(1)])?.mul_(&t[1])?;
            y.exp()
        },
        &[x.clone(), s.clone()],
    );
    check_fd(
        "copy_ into a transposed view",
        |t| {
            let y = t[0].mul_scalar(2.0)?;
            y.t()?.narrow(0, 0, 1)?.copy_(&t[1].narrow(0, 0, 3)?.unsqueeze(0)?)?;
            y.sin()
        },
        &[x.clone(), s],
    );
    check_fd(
        "index_put_ of a tensor value",
        |t| {
            let y = t[0].mul_scalar(1.0)?;
            y.index_put_(
                &[sl(None, None, 1), IndexItem::Int(2)],
                &t[0].index(&[IndexItem::Int(0), sl(Some(1), None, 1)])?,
            )?;
            y.tanh()
        },
        &[x],
    );
}

#[test]
fn composite_network_layer() {
    // A two-layer network: relu(x W1 + b1) W2, mean-reduced.
    let x = rand_leaf(&[5, 3], 69);
    let w1 = rand_leaf(&[3, 4], 70);
    let b1 = rand_leaf(&[4], 71);
    let w2 = rand_leaf(&[4, 2], 72);
    check_fd(
        "two-layer network",
        |t| t[0].matmul(&t[1])?.add(&t[2])?.tanh()?.matmul(&t[3])?.sigmoid()?.mean(Some(&[0]), false),
        &[x, w1, b1, w2],
    );
}

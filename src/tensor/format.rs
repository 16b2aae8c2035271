//! Printing, in PyTorch's style: `tensor([1., 2.])`, a common number format for all elements,
//! rows aligned, and `...` past 1000 elements.

use super::dtype::DType;
use super::element::Element;
use super::Tensor;

const SUMMARIZE_OVER: usize = 1000;
const EDGE: usize = 3;

enum Style {
    Int,
    Bool,
    /// Whole-valued floats: `1.`
    FloatWhole,
    /// Fixed point with 4 decimals.
    Fixed,
    /// Scientific with 4 decimals.
    Sci,
}

fn pick_style(dtype: DType, vals: &[f64]) -> Style {
    match dtype {
        DType::Int64 => return Style::Int,
        DType::Bool => return Style::Bool,
        _ => {}
    }
    let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.iter().all(|v| v.fract() == 0.0) {
        let max = finite.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        return if max < 1e8 { Style::FloatWhole } else { Style::Sci };
    }
    let nonzero: Vec<f64> = finite.iter().map(|v| v.abs()).filter(|&v| v > 0.0).collect();
    let max = nonzero.iter().fold(0.0f64, |a, &v| a.max(v));
    let min = nonzero.iter().fold(f64::INFINITY, |a, &v| a.min(v));
    if max >= 1e8 || min < 1e-4 || (max / min) > 1e5 {
        Style::Sci
    } else {
        Style::Fixed
    }
}

fn fmt_one(v: f64, style: &Style) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    match style {
        Style::Int => format!("{}", v as i64),
        Style::Bool => {
            if v != 0.0 {
                "True".into()
            } else {
                "False".into()
            }
        }
        Style::FloatWhole => format!("{}.", v as i64),
        Style::Fixed => format!("{v:.4}"),
        Style::Sci => {
            // Two exponent digits at least, as PyTorch (and C's printf) writes them: `1.5000e+00`.
            let s = format!("{v:.4e}");
            let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
            let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
    }
}

/// The indices shown along one dimension of `n` elements: all of them, or the first and last
/// `EDGE` when the printout is summarized (the `...` goes between them).
fn shown(n: usize, summarize: bool) -> Vec<usize> {
    if summarize && n > 2 * EDGE {
        (0..EDGE).chain(n - EDGE..n).collect()
    } else {
        (0..n).collect()
    }
}

/// The shown elements, row-major over the shown indices of each dimension, as text. Only those
/// elements are read: a summarized huge (e.g. expanded) tensor prints without being copied.
fn shown_strings(t: &Tensor, kept: &[Vec<usize>]) -> crate::error::Result<Vec<String>> {
    let count = kept.iter().map(|k| k.len()).product::<usize>();
    let mut positions: Vec<usize> = Vec::with_capacity(count);
    // Storage positions of the shown elements, by an odometer over the shown indices.
    let l = t.layout();
    let mut idx = vec![0usize; kept.len()];
    for _ in 0..count {
        positions.push(
            idx.iter()
                .enumerate()
                .fold(l.offset, |acc, (d, &j)| acc.saturating_add(kept[d][j].saturating_mul(l.strides[d]))),
        );
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < kept[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
    if t.dtype() == DType::Int64 {
        let vals = read_at::<i64>(t, &positions)?;
        return Ok(vals.iter().map(|v| v.to_string()).collect());
    }
    let vals = crate::dispatch_all!(t.dtype(), T => read_at::<T>(t, &positions)?
        .into_iter()
        .map(|x| x.to_f64())
        .collect::<Vec<f64>>());
    let style = pick_style(t.dtype(), &vals);
    Ok(vals.iter().map(|&v| fmt_one(v, &style)).collect())
}

/// The elements at the given storage positions (each checked against the storage).
fn read_at<T: Element>(t: &Tensor, positions: &[usize]) -> crate::error::Result<Vec<T>> {
    let guard = t.storage().read();
    let slice = T::slice(&guard).ok_or_else(|| crate::error::Error::dtype("format: dtype mismatch"))?;
    positions
        .iter()
        .map(|&p| {
            slice
                .get(p)
                .copied()
                .ok_or_else(|| crate::error::Error::index("tensor layout reaches past the end of its storage"))
        })
        .collect()
}

/// The data part: `tensor([...])` without the suffixes.
pub fn format_data(t: &Tensor) -> String {
    let shape = t.shape().to_vec();
    if t.numel() == 0 {
        // As PyTorch: the shape of an empty tensor is spelled out unless it is `(0,)`.
        return if shape.len() == 1 {
            "tensor([])".into()
        } else {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("tensor([], size=({}))", dims.join(", "))
        };
    }
    let summarize = t.numel() > SUMMARIZE_OVER;
    let kept: Vec<Vec<usize>> = shape.iter().map(|&n| shown(n, summarize)).collect();
    let strs = match shown_strings(t, &kept) {
        Ok(v) => v,
        Err(e) => return format!("tensor(<unreadable: {e}>)"),
    };
    let width = strs.iter().map(|s| s.len()).max().unwrap_or(0);
    if shape.is_empty() {
        return format!("tensor({})", strs.first().cloned().unwrap_or_default());
    }
    let lens: Vec<usize> = kept.iter().map(|k| k.len()).collect();
    let cut: Vec<bool> = kept.iter().zip(&shape).map(|(k, &n)| k.len() < n).collect();
    let mut out = String::from("tensor(");
    write_block(&mut out, &strs, &lens, &cut, 0, 0, width, "tensor(".len());
    out.push(')');
    out
}

/// Writes dimension `dim` of the shown elements (`lens` of them along each dimension, row-major
/// from `offset`); a `cut` dimension gets `...` between its first and last `EDGE` entries.
#[allow(clippy::too_many_arguments)]
fn write_block(
    out: &mut String,
    strs: &[String],
    lens: &[usize],
    cut: &[bool],
    dim: usize,
    offset: usize,
    width: usize,
    indent: usize,
) {
    let n = lens[dim];
    let inner: usize = lens[dim + 1..].iter().product();
    let idx: Vec<Option<usize>> = if cut[dim] {
        (0..EDGE).map(Some).chain(std::iter::once(None)).chain((EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    let last = dim + 1 == lens.len();
    for (k, i) in idx.iter().enumerate() {
        if k > 0 {
            if last {
                out.push_str(", ");
            } else {
                out.push(',');
                for _ in 0..(lens.len() - dim - 1) {
                    out.push('\n');
                }
                out.pop();
                out.push('\n');
                if lens.len() - dim > 2 {
                    out.push('\n');
                }
                out.push_str(&" ".repeat(indent + dim + 1));
            }
        }
        match i {
            None => out.push_str("..."),
            Some(i) if last => out.push_str(&format!("{:>width$}", strs[offset + i])),
            Some(i) => write_block(out, strs, lens, cut, dim + 1, offset + i * inner, width, indent),
        }
    }
    out.push(']');
}

/// The full printout used by `Debug`.
pub fn format_tensor(t: &Tensor) -> String {
    let mut s = format_data(t);
    s.pop();
    // An empty tensor shows every dtype but the default: there are no elements to tell it by.
    if t.dtype() == DType::Float64 || (t.numel() == 0 && t.dtype() != DType::Float32) {
        s.push_str(&format!(", dtype=tapegrad.{}", t.dtype()));
    }
    if let Some(f) = t.grad_fn() {
        s.push_str(&format!(", grad_fn=<{}>", f.name()));
    } else if t.requires_grad() {
        s.push_str(", requires_grad=True");
    }
    s.push(')');
    s
}

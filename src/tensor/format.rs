//! Printing, in PyTorch's style: `tensor([1., 2.])`, a common number format for all elements,
//! rows aligned, and `...` past 1000 elements.

use super::dtype::DType;
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
        Style::Sci => format!("{v:.4e}").replace('e', "e+").replace("e+-", "e-"),
    }
}

/// The data part: `tensor([...])` without the suffixes.
pub fn format_data(t: &Tensor) -> String {
    let vals = match t.to_f64_vec() {
        Ok(v) => v,
        Err(e) => return format!("tensor(<unreadable: {e}>)"),
    };
    let shape = t.shape().to_vec();
    let summarize = vals.len() > SUMMARIZE_OVER;
    let style = pick_style(t.dtype(), &vals);
    let strs: Vec<String> = vals.iter().map(|&v| fmt_one(v, &style)).collect();
    let width = strs.iter().map(|s| s.len()).max().unwrap_or(0);
    if shape.is_empty() {
        return format!("tensor({})", strs.first().cloned().unwrap_or_default());
    }
    let mut out = String::from("tensor(");
    write_block(&mut out, &strs, &shape, 0, 0, width, summarize, "tensor(".len());
    out.push(')');
    out
}

#[allow(clippy::too_many_arguments)]
fn write_block(
    out: &mut String,
    strs: &[String],
    shape: &[usize],
    dim: usize,
    offset: usize,
    width: usize,
    summarize: bool,
    indent: usize,
) {
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let idx: Vec<Option<usize>> = if summarize && n > 2 * EDGE {
        (0..EDGE).map(Some).chain(std::iter::once(None)).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    let last = dim + 1 == shape.len();
    for (k, i) in idx.iter().enumerate() {
        if k > 0 {
            if last {
                out.push_str(", ");
            } else {
                out.push(',');
                for _ in 0..(shape.len() - dim - 1) {
                    out.push('\n');
                }
                out.pop();
                out.push('\n');
                if shape.len() - dim > 2 {
                    out.push('\n');
                }
                out.push_str(&" ".repeat(indent + dim + 1));
            }
        }
        match i {
            None => out.push_str("..."),
            Some(i) if last => out.push_str(&format!("{:>width$}", strs[offset + i])),
            Some(i) => write_block(out, strs, shape, dim + 1, offset + i * inner, width, summarize, indent),
        }
    }
    out.push(']');
}

/// The full printout used by `Debug`.
pub fn format_tensor(t: &Tensor) -> String {
    let mut s = format_data(t);
    s.pop();
    if !matches!(t.dtype(), DType::Float32 | DType::Int64 | DType::Bool) {
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

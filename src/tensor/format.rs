//! Printing, in PyTorch's style: `tensor([1., 2.])`, a common number format for all elements,
//! rows aligned, and `...` past 1000 elements. `set_print_options` changes these settings for the
//! whole process, as `torch.set_printoptions` does.

use parking_lot::RwLock;

use super::dtype::DType;
use super::element::Element;
use super::Tensor;

/// How tensors print.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintOptions {
    /// Digits after the point for non-whole floats.
    pub precision: usize,
    /// A tensor with more elements than this prints summarized (`...`).
    pub threshold: usize,
    /// Entries shown at each end of a summarized dimension.
    pub edgeitems: usize,
    /// Innermost rows wrap so that a line holds as many elements as fit in this many columns.
    pub linewidth: usize,
    /// `Some(true)` always scientific, `Some(false)` never, `None` chosen by the values.
    pub sci_mode: Option<bool>,
}

impl PrintOptions {
    /// The settings of PyTorch's profiles: `"default"`, `"short"` and `"full"`.
    pub fn profile(name: &str) -> Option<Self> {
        let default = PrintOptions { precision: 4, threshold: 1000, edgeitems: 3, linewidth: 80, sci_mode: None };
        match name {
            "default" => Some(default),
            "short" => Some(PrintOptions { precision: 2, edgeitems: 2, ..default }),
            "full" => Some(PrintOptions { threshold: usize::MAX, ..default }),
            _ => None,
        }
    }
}

static OPTIONS: RwLock<PrintOptions> =
    RwLock::new(PrintOptions { precision: 4, threshold: 1000, edgeitems: 3, linewidth: 80, sci_mode: None });

/// The current print settings.
pub fn print_options() -> PrintOptions {
    *OPTIONS.read()
}

/// Replace the print settings for the whole process.
pub fn set_print_options(options: PrintOptions) {
    *OPTIONS.write() = options;
}

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

fn pick_style(dtype: DType, vals: &[f64], sci_mode: Option<bool>) -> Style {
    match dtype {
        d if d.is_int() => return Style::Int,
        DType::Bool => return Style::Bool,
        _ => {}
    }
    let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
    match sci_mode {
        Some(true) => return Style::Sci,
        Some(false) if finite.iter().all(|v| v.fract() == 0.0) => return Style::FloatWhole,
        Some(false) => return Style::Fixed,
        None => {}
    }
    // PyTorch's rule: scientific when the magnitudes span more than three decades or reach past
    // 1e8, or (for non-whole values) when one is below 1e-4.
    let nonzero: Vec<f64> = finite.iter().map(|v| v.abs()).filter(|&v| v > 0.0).collect();
    let max = nonzero.iter().fold(0.0f64, |a, &v| a.max(v));
    let min = nonzero.iter().fold(f64::INFINITY, |a, &v| a.min(v));
    let wide = !nonzero.is_empty() && (max / min > 1000.0 || max > 1e8);
    if finite.iter().all(|v| v.fract() == 0.0) {
        return if wide { Style::Sci } else { Style::FloatWhole };
    }
    if wide || min < 1e-4 {
        Style::Sci
    } else {
        Style::Fixed
    }
}

fn fmt_one(v: f64, style: &Style, precision: usize) -> String {
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
        Style::Fixed => format!("{v:.precision$}"),
        Style::Sci => {
            // Two exponent digits at least, as PyTorch (and C's printf) writes them: `1.5000e+00`.
            let s = format!("{v:.precision$e}");
            let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
            let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
    }
}

/// The indices shown along one dimension of `n` elements: all of them, or the first and last
/// `edge` when the printout is summarized (the `...` goes between them).
fn shown(n: usize, summarize: bool, edge: usize) -> Vec<usize> {
    if summarize && n > 2 * edge {
        (0..edge).chain(n - edge..n).collect()
    } else {
        (0..n).collect()
    }
}

/// The shown elements, row-major over the shown indices of each dimension, as text. Only those
/// elements are read: a summarized huge (e.g. expanded) tensor prints without being copied.
fn shown_strings(t: &Tensor, kept: &[Vec<usize>], opts: &PrintOptions) -> crate::error::Result<Vec<String>> {
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
    if t.dtype().is_int() {
        return crate::dispatch_int!(t.dtype(), T => Ok(read_at::<T>(t, &positions)?.iter().map(|v| v.to_string()).collect()),
            _ => unreachable!("an integer dtype"));
    }
    let vals = crate::dispatch_all!(t.dtype(), T => read_at::<T>(t, &positions)?
        .into_iter()
        .map(|x| x.to_f64())
        .collect::<Vec<f64>>());
    let style = pick_style(t.dtype(), &vals, opts.sci_mode);
    Ok(vals.iter().map(|&v| fmt_one(v, &style, opts.precision)).collect())
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
    let opts = print_options();
    let summarize = t.numel() > opts.threshold;
    let kept: Vec<Vec<usize>> = shape.iter().map(|&n| shown(n, summarize, opts.edgeitems)).collect();
    let strs = match shown_strings(t, &kept, &opts) {
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
    let layout = Layout { strs: &strs, lens, cut, width, indent: "tensor(".len(), linewidth: opts.linewidth };
    layout.block(&mut out, 0, 0);
    out.push(')');
    out
}

/// The shown elements laid out as PyTorch prints them: nested brackets, summarized dimensions
/// with `...`, and the innermost rows wrapped at `linewidth`.
struct Layout<'a> {
    /// The shown elements as text, row-major.
    strs: &'a [String],
    /// How many elements are shown along each dimension.
    lens: Vec<usize>,
    /// Whether each dimension is summarized (its shown entries are its first and last halves).
    cut: Vec<bool>,
    /// The width every element is padded to.
    width: usize,
    /// The column the outermost `[` is written at.
    indent: usize,
    linewidth: usize,
}

impl Layout<'_> {
    /// Writes dimension `dim` of the shown elements, starting at element `offset`.
    fn block(&self, out: &mut String, dim: usize, offset: usize) {
        let n = self.lens[dim];
        let idx: Vec<Option<usize>> = if self.cut[dim] {
            let edge = n / 2;
            (0..edge).map(Some).chain(std::iter::once(None)).chain((edge..n).map(Some)).collect()
        } else {
            (0..n).map(Some).collect()
        };
        out.push('[');
        if dim + 1 == self.lens.len() {
            self.row(out, dim, offset, &idx);
        } else {
            let inner: usize = self.lens[dim + 1..].iter().product();
            // Blocks of a higher dimension are separated by one blank line per dimension below.
            let gap = "\n".repeat(self.lens.len() - dim - 1);
            let pad = " ".repeat(self.indent + dim + 1);
            for (k, i) in idx.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                    out.push_str(&gap);
                    out.push_str(&pad);
                }
                match i {
                    None => out.push_str("..."),
                    Some(i) => self.block(out, dim + 1, offset + i * inner),
                }
            }
        }
        out.push(']');
    }

    /// The innermost dimension: as many padded elements per line as fit in `linewidth` (at least one).
    fn row(&self, out: &mut String, dim: usize, offset: usize, idx: &[Option<usize>]) {
        let column = self.indent + dim;
        let per_line = (self.linewidth.saturating_sub(column) / (self.width + 2)).max(1);
        let items: Vec<String> = idx
            .iter()
            .map(|i| match i {
                None => " ...".to_string(),
                Some(i) => format!("{:>w$}", self.strs[offset + i], w = self.width),
            })
            .collect();
        let pad = format!(",\n{}", " ".repeat(column + 1));
        let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
        out.push_str(&lines.join(&pad));
    }
}

/// The full printout used by `Debug`.
pub fn format_tensor(t: &Tensor) -> String {
    let mut s = format_data(t);
    s.pop();
    // The dtypes the values cannot show (as PyTorch: all but float32, int64 and bool); an empty
    // tensor shows every dtype but the default: there are no elements to tell it by.
    let shown = !matches!(t.dtype(), DType::Float32 | DType::Int64 | DType::Bool);
    if shown || (t.numel() == 0 && t.dtype() != DType::Float32) {
        s.push_str(&format!(", dtype=tapegrad.{}", t.dtype()));
    }
    if let Some(f) = t.grad_fn() {
        s.push_str(&format!(", grad_fn=<{}>", f.name()));
    } else if t.requires_grad() {
        s.push_str(", requires_grad=True");
    }
    // A dual tensor shows the tangent of the innermost visible level, as PyTorch shows its one
    // level's: a 0-d tangent as its value, on a new line when the line would pass 80 columns.
    if let Ok(Some(tangent)) = t.tangent(None) {
        let shown = if tangent.ndim() == 0 {
            tangent.to_f64_vec().ok().and_then(|v| v.first().copied()).map(py_float).unwrap_or_default()
        } else {
            format_tensor(&tangent)
        };
        let suffix = format!("tangent={shown}");
        let last_line = s.len() - s.rfind('\n').map_or(0, |i| i + 1);
        if last_line + suffix.len() + 2 > 80 {
            s.push_str(",\n       ");
        } else {
            s.push_str(", ");
        }
        s.push_str(&suffix);
    }
    s.push(')');
    s
}

/// A float as Python's `repr` writes it (`7.0`, `0.5`, `inf`, `nan`).
fn py_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

//! The run page's plot over time (Jepsen's habit): the latency of every acquire attempt as a
//! point at the time it was invoked, coloured by outcome (`ok`, `fail`, `info`), with the
//! run's fault windows as bands; inline SVG drawn with `plotters`.

use locksim_core::{Nanos, NodeId};
use plotters::prelude::*;

use crate::data::PageData;

/// At most this many points are drawn (every k-th attempt beyond it, said in the caption), so
/// a page of a long run stays small.
const MAX_POINTS: usize = 4_000;

fn seconds(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

/// The plot as an SVG element, or an empty string for a run without acquire attempts.
pub fn latency_svg(data: &PageData) -> String {
    if data.attempts.is_empty() {
        return String::new();
    }
    let step = data.attempts.len().div_ceil(MAX_POINTS);
    let shown: Vec<_> = data.attempts.iter().step_by(step).collect();
    let ms = |a: &&(NodeId, u32, Nanos, Nanos, &str)| a.3.saturating_sub(a.2) as f64 / 1e6;
    let top = shown.iter().map(&ms).fold(1.0f64, f64::max) * 1.1;
    let end = seconds(data.end).max(1e-3);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 260)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let caption = if step > 1 {
            format!("acquire latency over time (every {step}th attempt), fault windows shaded")
        } else {
            "acquire latency over time, fault windows shaded".to_string()
        };
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..end, 0f64..top)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc("true time (s)")
            .y_desc("latency (ms)")
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw();
        let band = RGBColor(0x9a, 0xa3, 0xb2).mix(0.22);
        let _ = chart.draw_series(data.faults.iter().filter(|f| f.2 > f.1).map(|f| {
            Rectangle::new(
                [(seconds(f.1), 0.0), (seconds(f.2).min(end), top)],
                band.filled(),
            )
        }));
        for (outcome, colour) in [
            ("ok", RGBColor(0x2e, 0x8b, 0x57)),
            ("fail", RGBColor(0xc0, 0x39, 0x2b)),
            ("info", RGBColor(0xd3, 0x7b, 0x00)),
        ] {
            let pts: Vec<(f64, f64)> = shown
                .iter()
                .filter(|a| a.4 == outcome)
                .map(|a| (seconds(a.2), ms(a)))
                .collect();
            if let Ok(s) =
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 2, colour.filled())))
            {
                s.label(format!("{outcome} ({})", pts.len()))
                    .legend(move |(x, y)| Circle::new((x + 6, y), 3, colour.filled()));
            }
        }
        let _ = chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xbb, 0xbb, 0xbb))
            .draw();
        let _ = root.present();
    }
    svg
}

#[cfg(test)]
mod tests {
    use locksim_core::FaultKind;
    use locksim_explore::{check_scenario, Setup};

    use crate::{render_html, Run};

    #[test]
    fn the_run_page_plots_each_attempt_and_shades_the_faults() {
        let setup = Setup::registered("redlock", &[]).unwrap();
        let scenario = setup.scenario(5, &[FaultKind::Pause]);
        let out = check_scenario(&scenario, setup.algo.clone());
        let history = out.history.unwrap();
        let run = Run {
            scenario: &scenario,
            history: &history,
            verdict: &out.verdict,
            title: "t".into(),
            notes: vec![],
            record: false,
            session: false,
        };
        let data = crate::page_data(&run);
        let svg = super::latency_svg(&data);
        let ok = data.attempts.iter().filter(|a| a.4 == "ok").count();
        let fail = data.attempts.iter().filter(|a| a.4 == "fail").count();
        assert!(ok > 0 && fail > 0);
        assert!(
            svg.contains(&format!("ok ({ok})")),
            "the legend counts the ok attempts"
        );
        assert!(svg.contains(&format!("fail ({fail})")));
        // One circle per attempt (plus the legend's), and a band per fault.
        assert!(svg.matches("<circle").count() >= data.attempts.len());
        assert!(svg.matches("<rect").count() > data.faults.len());
        let page = render_html(&run);
        assert!(page.contains("<figure id=\"latency\"><svg"));
        assert!(!page.contains("http://"));
    }
}

//! The offscreen renderer against geometry known in closed form, and every
//! shipped scene rendered to a non-blank PNG.
//!
//! The disc test draws one red disc of radius r (m) at a known camera on a
//! white background and measures it in the read-back picture:
//! * its pixel count (pixels more than half covered: green < 128) against
//!   π(r·s)² (s pixels per metre) within 2 %: the anti-aliased edge gives
//!   each pixel its coverage, so the count misses the area only by the
//!   discretisation of the rim (≈ perimeter / √12 pixels in the worst case,
//!   well under 2 % at these radii);
//! * its centroid within 1 px of where the camera puts the centre.
//!
//! Widths are odd and not multiples of 64 on purpose: a readback that
//! ignores the 256-byte row padding shears the disc, which moves its
//! centroid by many pixels and smears the count.

mod common;

use std::path::Path;

use glam::DVec2;
use mx2d::body::Body;
use mx2d::render::png::{Image, Offscreen, padded_bytes_per_row, unpad_rows};
use mx2d::render::{Camera, Extras, Style, draw_list, rgba};
use mx2d::shape::Shape;
use mx2d::world::World;

fn offscreen() -> Option<Offscreen> {
    let ctx = common::gpu(Default::default())?;
    Some(Offscreen::new(std::sync::Arc::new(ctx)).expect("render pipelines build"))
}

fn red_disc(off: &mut Offscreen, size: (u32, u32), centre: DVec2, radius: f64, camera: Camera) -> Image {
    let mut world = World::new(DVec2::ZERO);
    let body = Body::builder("disc", Shape::Circle { radius }).mass(1.0).position(centre).angle(0.7).build().unwrap();
    world.add_body(body).unwrap();
    let style = Style { background: rgba(255, 255, 255, 255), palette: vec![rgba(255, 0, 0, 255)], ..Style::default() };
    let list = draw_list(&world, &camera, size.0, size.1, &style, Extras::default());
    off.render(&list, &camera, size, style.background, None).expect("render")
}

#[test]
fn disc_area_and_centre_match_the_camera() {
    let Some(mut off) = offscreen() else { return };
    // (width, height, centre (m), radius (m), camera centre, pixels per metre)
    let cases = [
        (301, 199, DVec2::new(0.3, -0.2), 0.5, DVec2::ZERO, 61.0),
        (257, 129, DVec2::new(-1.1, 0.4), 0.3, DVec2::new(-1.0, 0.5), 97.0),
        (64, 64, DVec2::new(0.01, 0.02), 1.0, DVec2::ZERO, 17.5),
        (513, 333, DVec2::new(12.0, 7.5), 2.0, DVec2::new(11.0, 7.0), 23.3),
    ];
    for (w, h, centre, radius, cam_centre, scale) in cases {
        let camera = Camera::new(cam_centre, scale);
        let image = red_disc(&mut off, (w, h), centre, radius, camera);
        assert_eq!((image.width, image.height, image.rgba.len()), (w, h, (4 * w * h) as usize));
        let (mut count, mut sx, mut sy) = (0usize, 0.0, 0.0);
        for y in 0..h {
            for x in 0..w {
                let [r, g, b, a] = image.pixel(x, y);
                assert_eq!(a, 255, "opaque picture");
                if g < 128 {
                    assert!(r > g && r >= b, "disc pixels are red-ish at ({x}, {y}): {:?}", [r, g, b]);
                    count += 1;
                    sx += f64::from(x) + 0.5;
                    sy += f64::from(y) + 0.5;
                }
            }
        }
        let r_px = radius * scale;
        let area = std::f64::consts::PI * r_px * r_px;
        let rel = (count as f64 - area).abs() / area;
        assert!(rel < 0.02, "{w}×{h}: {count} disc pixels against π r² = {area:.1} ({:.2} %)", 100.0 * rel);
        let expected = camera.pixel_of(centre, w, h);
        let got = DVec2::new(sx, sy) / count as f64;
        assert!((got - expected).length() < 1.0, "{w}×{h}: disc centre at {got:?}, camera puts it at {expected:?}");
        // Outside the disc and its 1.5-pixel rim the picture is background.
        for (x, y) in [(0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1)] {
            let p = DVec2::new(f64::from(x) + 0.5, f64::from(y) + 0.5);
            if (p - expected).length() > r_px + 2.0 {
                assert_eq!(image.pixel(x, y), [255, 255, 255, 255], "{w}×{h}: corner ({x}, {y})");
            }
        }
    }
}

#[test]
fn row_padding_is_removed_for_odd_widths() {
    for width in [1u32, 3, 63, 64, 65, 257] {
        let height = 3;
        let row = padded_bytes_per_row(width);
        assert_eq!(row % 256, 0);
        assert!(row >= 4 * width && row < 4 * width + 256);
        // Each pixel byte encodes (x, y); padding bytes are 0xEE.
        let mut padded = vec![0xEEu8; (row * height) as usize];
        for y in 0..height {
            for x in 0..4 * width {
                padded[(y * row + x) as usize] = ((x * 7 + y * 13) % 251) as u8;
            }
        }
        let out = unpad_rows(&padded, width, height, row);
        assert_eq!(out.len(), (4 * width * height) as usize);
        for y in 0..height {
            for x in 0..4 * width {
                assert_eq!(out[(y * 4 * width + x) as usize], ((x * 7 + y * 13) % 251) as u8);
            }
        }
    }
}

/// Every scene in scenes/ renders through the binary, and the picture is not
/// blank: at least 1 % of its pixels differ from the background's colour and
/// there are several colours (bodies, surfaces, overlay).
#[test]
fn every_scene_renders_non_blank() {
    let Some(_) = common::gpu(Default::default()) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut scenes: Vec<_> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .collect();
    scenes.sort();
    assert!(scenes.len() >= 10, "scenes/ holds the shipped scenes");
    for scene in scenes {
        let out = dir.path().join(format!("{}.png", scene.file_stem().unwrap().to_string_lossy()));
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_mx2d"))
            .args(["render", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "--time", "0.05"])
            .args(["--size", "161x121"])
            .output()
            .unwrap();
        assert!(status.status.success(), "{}: {}", scene.display(), String::from_utf8_lossy(&status.stderr));
        let image = Image::read_png(&out).unwrap();
        assert_eq!((image.width, image.height), (161, 121));
        let background = Style::default().background.to_le_bytes();
        let differing = image.rgba.chunks(4).filter(|p| **p != background).count();
        let mut colours: Vec<&[u8]> = image.rgba.chunks(4).collect();
        colours.sort();
        colours.dedup();
        assert!(
            differing * 100 > (image.width * image.height) as usize && colours.len() >= 4,
            "{}: blank picture ({differing} pixels off the background, {} colours)",
            scene.display(),
            colours.len()
        );
    }
}

#[test]
fn render_refuses_bad_sizes_and_times_with_a_message() {
    let exe = env!("CARGO_BIN_EXE_mx2d");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/wheel.ron");
    for (args, expected) in [
        (vec!["--size", "0x10"], "from 1 to 16384"),
        (vec!["--size", "800"], "WIDTHxHEIGHT"),
        (vec!["--time=-1"], "--time"),
    ] {
        let out = std::process::Command::new(exe)
            .args(["render", scene.to_str().unwrap(), "--out", "/nonexistent/x.png"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

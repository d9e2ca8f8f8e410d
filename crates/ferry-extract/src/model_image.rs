//! Images made ready for a vision model: what the model is shown of an uploaded picture.
//!
//! Vision models accept images whose long edge is at most 1,568 pixels and whose bytes are at
//! most 5 MB; larger ones are refused or shrunk by the provider at the caller's cost. So an
//! image is shown to a model as:
//!
//! - the original bytes, when it is a PNG or a JPEG that already fits (long edge ≤ 1,568 px,
//!   ≤ 5,000,000 bytes) and carries no EXIF rotation;
//! - otherwise a re-encoding: EXIF orientation applied, scaled down (aspect kept) until the
//!   long edge is at most 1,568 px, the first frame only of an animation; written as PNG when
//!   the source is lossless (PNG, GIF) or has transparency, as JPEG (quality 85, then lower)
//!   for photographs or when the PNG would pass 5,000,000 bytes.
//!
//! Decoding reads untrusted bytes, so it runs in the extraction worker, and an image is
//! refused by its declared dimensions before a pixel is decoded ([`check_pixels`]): a PNG of
//! a few kilobytes may declare 100,000 × 100,000 pixels.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, RgbImage};
use serde::{Deserialize, Serialize};

use crate::error::ExtractError;
use crate::limits::Limits;

/// The longest edge, in pixels, of an image shown to a model.
pub const MODEL_MAX_EDGE: u32 = 1568;
/// The most bytes of an image shown to a model.
pub const MODEL_MAX_BYTES: usize = 5_000_000;

/// JPEG qualities tried in turn until the encoding fits [`MODEL_MAX_BYTES`].
const JPEG_QUALITIES: [u8; 4] = [85, 70, 55, 40];

/// An image as a model is shown it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelImage {
    /// `image/png`, `image/jpeg`.
    pub mime_type: String,
    /// The image's bytes, base64 (standard alphabet, padded).
    pub base64: String,
    /// Width in pixels, as shown.
    pub width: u32,
    /// Height in pixels, as shown.
    pub height: u32,
}

/// Refuses an image whose declared size is more pixels than [`Limits::max_image_pixels`]:
/// its decoded form would not fit the reader's memory. Checked from the header alone, before
/// anything is decoded.
pub(crate) fn check_pixels(width: u64, height: u64, limits: &Limits) -> Result<(), ExtractError> {
    if width.saturating_mul(height) > limits.max_image_pixels {
        return Err(ExtractError::limit(format!(
            "the image declares {width} × {height} pixels, more than the {} megapixels \
             an image may have",
            limits.max_image_pixels / 1_000_000
        )));
    }
    Ok(())
}

/// Makes the image in `bytes` ready for a model (see the module's documentation).
pub fn model_image(bytes: &[u8], limits: &Limits) -> Result<ModelImage, ExtractError> {
    let declared = imagesize::blob_size(bytes).map_err(|e| ExtractError::invalid("image", e))?;
    check_pixels(declared.width as u64, declared.height as u64, limits)?;

    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ExtractError::invalid("image", e))?;
    let format = reader.format().ok_or_else(|| {
        ExtractError::invalid("image", "its format is not PNG, JPEG, GIF or WebP")
    })?;
    let mut decoder_limits = image::Limits::default();
    decoder_limits.max_alloc = Some(limits.max_image_decode_bytes);
    reader.limits(decoder_limits);
    let mut decoder = reader.into_decoder().map_err(decode_error)?;
    // The decoder's own idea of the size can differ from the header sniffed above.
    let (width, height) = decoder.dimensions();
    check_pixels(u64::from(width), u64::from(height), limits)?;
    // An unreadable EXIF block is no reason to refuse the picture: shown as stored.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;

    let fits = width.max(height) <= MODEL_MAX_EDGE && bytes.len() <= MODEL_MAX_BYTES;
    if fits
        && orientation == Orientation::NoTransforms
        && matches!(format, ImageFormat::Png | ImageFormat::Jpeg)
    {
        return Ok(ModelImage {
            mime_type: format.to_mime_type().to_owned(),
            base64: STANDARD.encode(bytes),
            width,
            height,
        });
    }

    // Scaling first and rotating second costs less, and the long edge is the same either way.
    let mut image = scale_to_fit(image, MODEL_MAX_EDGE);
    image.apply_orientation(orientation);
    let lossless = matches!(format, ImageFormat::Png | ImageFormat::Gif);
    encode(&image, lossless || image.color().has_alpha())
}

/// The image scaled down, aspect kept, so that its long edge is at most `max_edge`.
fn scale_to_fit(image: DynamicImage, max_edge: u32) -> DynamicImage {
    let (width, height) = (image.width(), image.height());
    let long = width.max(height);
    if long <= max_edge {
        return image;
    }
    let scale = |edge: u32| {
        let scaled =
            (u64::from(edge) * u64::from(max_edge) + u64::from(long) / 2) / u64::from(long);
        u32::try_from(scaled).unwrap_or(max_edge).clamp(1, max_edge)
    };
    // Triangle (bilinear) widens its support when shrinking, so it averages every source
    // pixel: no aliasing, at a fraction of Lanczos's cost.
    image.resize_exact(scale(width), scale(height), FilterType::Triangle)
}

/// A PNG at most this large is kept without trying JPEG: drawings of text and lines stay
/// crisp, and at this size they cost a model little.
const SMALL_PNG_BYTES: usize = 512 * 1024;

/// Encodes a drawn page: as PNG, or as JPEG when that is smaller (a photograph or a scan on
/// the page), at most [`MODEL_MAX_BYTES`].
pub(crate) fn encode_drawing(image: &DynamicImage) -> Result<ModelImage, ExtractError> {
    let first = encode(image, true)?;
    if first.mime_type != "image/png" || first.base64.len() / 4 * 3 <= SMALL_PNG_BYTES {
        return Ok(first);
    }
    let jpeg = encode(image, false)?;
    Ok(if jpeg.base64.len() < first.base64.len() {
        jpeg
    } else {
        first
    })
}

/// Encodes `image` as PNG when `prefer_png` and the result fits, else as JPEG.
fn encode(image: &DynamicImage, prefer_png: bool) -> Result<ModelImage, ExtractError> {
    let shown = |mime_type: &str, bytes: Vec<u8>| ModelImage {
        mime_type: mime_type.to_owned(),
        base64: STANDARD.encode(bytes),
        width: image.width(),
        height: image.height(),
    };
    if prefer_png {
        let mut png = Vec::new();
        image
            .write_with_encoder(PngEncoder::new(&mut png))
            .map_err(encode_error)?;
        if png.len() <= MODEL_MAX_BYTES {
            return Ok(shown("image/png", png));
        }
    }
    let rgb = flatten_on_white(image);
    for quality in JPEG_QUALITIES {
        let mut jpeg = Vec::new();
        rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut jpeg, quality))
            .map_err(encode_error)?;
        if jpeg.len() <= MODEL_MAX_BYTES {
            return Ok(shown("image/jpeg", jpeg));
        }
    }
    Err(ExtractError::limit(format!(
        "the image does not fit in {MODEL_MAX_BYTES} bytes even as a JPEG of quality {}",
        JPEG_QUALITIES[JPEG_QUALITIES.len() - 1]
    )))
}

/// Eight-bit RGB, transparent parts shown over white (JPEG has no transparency, and the
/// colour hidden under a transparent pixel is often black or noise).
fn flatten_on_white(image: &DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let rgba = image.to_rgba8();
    RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let over_white = |c: u8| {
            let (c, a) = (u16::from(c), u16::from(a));
            // c·a + 255·(255 − a), divided by 255 and rounded; at most 255.
            u8::try_from((c * a + 255 * (255 - a) + 127) / 255).unwrap_or(u8::MAX)
        };
        image::Rgb([over_white(r), over_white(g), over_white(b)])
    })
}

fn decode_error(e: image::ImageError) -> ExtractError {
    match e {
        image::ImageError::Limits(_) => ExtractError::limit(
            "decoding the image would need more memory than an image may use".to_owned(),
        ),
        other => ExtractError::invalid("image", other),
    }
}

fn encode_error(e: image::ImageError) -> ExtractError {
    ExtractError::Worker(format!("the image could not be re-encoded ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, Rgba, RgbaImage};

    fn png(image: &DynamicImage) -> Vec<u8> {
        let mut out = Vec::new();
        image.write_with_encoder(PngEncoder::new(&mut out)).unwrap();
        out
    }

    fn decoded(shown: &ModelImage) -> DynamicImage {
        image::load_from_memory(&STANDARD.decode(&shown.base64).unwrap()).unwrap()
    }

    #[test]
    fn a_small_png_is_shown_as_it_is() {
        let bytes = png(&DynamicImage::ImageRgb8(RgbImage::from_pixel(
            40,
            30,
            Rgb([1, 2, 3]),
        )));
        let shown = model_image(&bytes, &Limits::default()).unwrap();
        assert_eq!(shown.mime_type, "image/png");
        assert_eq!(STANDARD.decode(&shown.base64).unwrap(), bytes);
        assert_eq!((shown.width, shown.height), (40, 30));
    }

    #[test]
    fn a_large_image_is_scaled_to_the_long_edge_with_its_aspect() {
        let bytes = png(&DynamicImage::ImageRgb8(RgbImage::from_pixel(
            4000,
            1000,
            Rgb([200, 10, 10]),
        )));
        let shown = model_image(&bytes, &Limits::default()).unwrap();
        assert_eq!((shown.width, shown.height), (1568, 392));
        let image = decoded(&shown);
        assert_eq!((image.width(), image.height()), (1568, 392));
        assert_eq!(shown.mime_type, "image/png");
    }

    #[test]
    fn transparency_over_white_when_written_as_jpeg() {
        let rgba = DynamicImage::ImageRgba8(RgbaImage::from_pixel(2, 1, Rgba([0, 0, 0, 0])));
        assert_eq!(flatten_on_white(&rgba).get_pixel(0, 0).0, [255, 255, 255]);
        let half = DynamicImage::ImageRgba8(RgbaImage::from_pixel(1, 1, Rgba([0, 0, 0, 128])));
        assert_eq!(flatten_on_white(&half).get_pixel(0, 0).0, [127, 127, 127]);
    }

    #[test]
    fn noise_too_large_for_png_falls_back_to_jpeg() {
        // Pseudo-random pixels do not compress: 1568 × 1568 × 3 bytes is over 7 MB as PNG.
        let mut state = 0x2545_f491_u32;
        let noise = RgbImage::from_fn(1568, 1568, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let [a, b, c, _] = state.to_le_bytes();
            Rgb([a, b, c])
        });
        let shown = encode(&DynamicImage::ImageRgb8(noise), true).unwrap();
        assert_eq!(shown.mime_type, "image/jpeg");
        assert!(STANDARD.decode(&shown.base64).unwrap().len() <= MODEL_MAX_BYTES);
    }

    #[test]
    fn exif_orientation_is_applied() {
        // A TIFF block (big-endian) with one entry: Orientation (0x0112) = 6, "rotate 90°".
        let exif = b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x06\0\0\0\0\0\0".to_vec();
        let mut jpeg = Vec::new();
        let mut encoder = JpegEncoder::new_with_quality(&mut jpeg, 90);
        image::ImageEncoder::set_exif_metadata(&mut encoder, exif).unwrap();
        DynamicImage::ImageRgb8(RgbImage::from_pixel(60, 20, Rgb([9, 9, 9])))
            .write_with_encoder(encoder)
            .unwrap();
        let shown = model_image(&jpeg, &Limits::default()).unwrap();
        assert_eq!((shown.width, shown.height), (20, 60), "turned upright");
        assert_eq!(shown.mime_type, "image/jpeg");
        let image = decoded(&shown);
        assert_eq!((image.width(), image.height()), (20, 60));
    }

    #[test]
    fn an_animation_is_shown_by_its_first_frame() {
        use image::codecs::gif::GifEncoder;
        let frame = |colour: [u8; 4]| image::Frame::new(RgbaImage::from_pixel(8, 8, Rgba(colour)));
        let mut gif = Vec::new();
        GifEncoder::new(&mut gif)
            .encode_frames([frame([255, 0, 0, 255]), frame([0, 0, 255, 255])])
            .unwrap();
        let shown = model_image(&gif, &Limits::default()).unwrap();
        assert_eq!(shown.mime_type, "image/png");
        let first = decoded(&shown).to_rgb8();
        assert_eq!(first.get_pixel(4, 4).0, [255, 0, 0]);
    }

    #[test]
    fn a_bomb_is_refused_by_its_declared_size() {
        let err = check_pixels(100_000, 100_000, &Limits::default()).unwrap_err();
        assert!(err.to_string().contains("100000 × 100000 pixels"), "{err}");
        assert!(check_pixels(6000, 4000, &Limits::default()).is_ok());
    }

    #[test]
    fn bytes_that_are_no_image_are_a_clear_error() {
        let err = model_image(b"\x89PNG\r\n\x1a\nnot really", &Limits::default()).unwrap_err();
        assert!(err.to_string().contains("not a readable image"), "{err}");
    }
}

"""Reading image files at their depth: 8-bit by 255, 16-bit grey and 16-bit RGB PNGs by 65535, float images as they are (a non-finite pixel is an error naming the file), 32-bit integer images refused; and checking a file's header (readable, a mode with a range, the channels asked for) before any pixel is read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp", ".gif")


# Pillow's modes (its "Concepts: Modes" page) by what a pixel value means. Every other mode holds
# 8-bit samples (0..255). 16-bit grey: 0..65535. F: 32-bit floats, no range of their own. I: 32-bit
# signed integers, no range either, except that Pillow's PPM/PGM reader puts 16-bit files there
# rescaled to 0..65535.
GREY16_MODES = ("I;16", "I;16L", "I;16B", "I;16N")


GREY_MODES = ("1", "L", "I", "F", *GREY16_MODES)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def image_channels(mode: str) -> int | None:
    """1 for grey modes, 3 for RGB, None for anything that needs an explicit conversion."""
    if mode in GREY_MODES:
        return 1
    if mode == "RGB":
        return 3
    return None


def unscalable_mode(mode: str, image_format: str | None) -> bool:
    """True for a PIL mode whose pixel values have no fixed range to scale to [0, 1] from:
    32-bit integers (mode I) from anything but Pillow's PPM/PGM reader (which rescales 16-bit
    files to 0..65535 there)."""
    return mode == "I" and image_format != "PPM"


def unscalable_message(path: Path, mode: str) -> str:
    return (f"{path}: PIL mode {mode!r} (32-bit integer pixels) has no fixed range to scale them to [0, 1] "
            "from; save the image as 8- or 16-bit PNG/TIFF, or as a float (mode F) TIFF with values in [0, 1]")


def png_bit_depth(path: Path) -> int | None:
    """Bits per sample of a PNG file (its IHDR chunk, byte 24 of the file: PNG spec 11.2.2),
    None for other files."""
    with open(path, "rb") as f:
        head = f.read(26)
    return head[24] if head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR" else None


def check_image(path: Path, channels: int | None = None, convert: bool = True) -> tuple[int, int]:
    """One image file's header checked, its size (W, H) returned, no pixel decoded.

    A file PIL cannot open or whose structure is broken, one of 32-bit integer pixels (no
    range to scale from), and, with ``channels`` given and ``convert`` false, one whose mode
    is not grey (``channels`` 1) or RGB (3) as asked, is a ValueError naming the file.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.verify()  # reads the file's structure without decoding all pixels
            mode, size, image_format = im.mode, im.size, im.format
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise ValueError(f"{path}: not a readable image ({type(e).__name__}: {e}); "
                         "expected an image file PIL can open") from e
    if unscalable_mode(mode, image_format):
        raise ValueError(unscalable_message(path, mode))
    have = image_channels(mode)
    if channels is not None and have != channels and not convert:
        what = {1: "grey", 3: "RGB", None: f"mode {mode}"}[have]
        raise ValueError(
            f"{path}: image is {what} (PIL mode {mode!r}) but channels={channels} "
            f"({'grey' if channels == 1 else 'RGB'}) was asked; set convert: true to convert, "
            "or set channels (and the encoder's in_channels) to match"
        )
    return size


def check_images(paths: list[Path], channels: int | None = None, convert: bool = True) -> dict[tuple[int, int], Path]:
    """``check_image`` of every file; each size (W, H) found, with the first file of that size."""
    sizes: dict[tuple[int, int], Path] = {}
    for p in paths:
        sizes.setdefault(check_image(p, channels, convert), p)
    return sizes


def pil_to_tensor(im) -> Tensor:
    """An 8-bit PIL image as (C, H, W) uint8, as torchvision's ``pil_to_tensor`` (without importing it)."""
    values = np.array(im)  # (H, W) or (H, W, C)
    return torch.from_numpy(values).view(values.shape[0], values.shape[1], -1).permute(2, 0, 1)


def read_image(path: Path, channels: int) -> Tensor:
    """One image file as (C, H, W) pixels, C = ``channels`` (1 grey, 3 RGB).

    8-bit images are read with PIL and converted by it (RGB -> L by ITU-R 601-2 luma, L/P/RGBA
    -> RGB), as uint8 0..255: the transforms scale them by 255. Deeper images come back as float32
    scaled by their own range, because PIL's conversion to L/RGB clips them to 8 bits: 16-bit grey
    (I;16, and 16-bit PGM, which Pillow reads as mode I) and 16-bit PNGs (torchvision's decoder:
    Pillow reads 16-bit RGB PNGs as 8-bit) are divided by 65535; float images (mode F) are taken
    as they are (torchvision's convention for float images: [0, 1]). A deep grey image becomes
    RGB by copying it into the three channels, a deep RGB one grey by ITU-R 601-2 luma, an
    alpha channel is dropped (as PIL's conversions do). A NaN or inf pixel is an error naming
    the file.
    """
    from PIL import Image

    # torchvision (seconds to import: a shipped predictor's start) only for the deep images
    if png_bit_depth(path) == 16:
        from torchvision.io import ImageReadMode, decode_image
        from torchvision.transforms import v2

        img = v2.functional.to_dtype(decode_image(str(path), ImageReadMode.UNCHANGED), torch.float32, scale=True)
        img = img[:3] if img.shape[0] >= 3 else img[:1]  # (C, H, W) without alpha: RGBA -> RGB, LA -> L
    else:
        with Image.open(path) as im:
            if im.mode not in ("I", "F", *GREY16_MODES):
                mode = "L" if channels == 1 else "RGB"
                return pil_to_tensor(im.convert(mode) if im.mode != mode else im)  # (C, H, W) uint8
            if unscalable_mode(im.mode, im.format):
                raise ValueError(unscalable_message(path, im.mode))
            values = np.asarray(im)  # (H, W): uint16 for I;16*, int32 for I, float32 for F
        from torchvision.transforms import v2

        if values.dtype.kind in "iu":  # 0..65535: I;16* and Pillow's 16-bit PGM
            img = v2.functional.to_dtype(torch.from_numpy(values.astype(np.uint16))[None], torch.float32, scale=True)
        else:
            img = torch.from_numpy(values.astype(np.float32))[None]  # (1, H, W)
            bad = ~torch.isfinite(img[0])
            if bad.any():
                r, c = (int(v) for v in bad.nonzero()[0])
                raise ValueError(f"{path}: {int(bad.sum())} of {bad.numel()} pixels are not finite (NaN or inf); "
                                 f"the first at row {r}, column {c}. Fix or remove the file")
    if img.shape[0] != channels:
        img = img.expand(3, -1, -1).clone() if channels == 3 else v2.functional.rgb_to_grayscale(img)
    return img

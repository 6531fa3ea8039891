"""What the wizard and its API make of the visitor's hardware and model: a hardware answer is either one of the
guide's classes or a catalog device and a count (the class then follows from the device's row), and the answer
links onward to the fit, break-even and cost answers for that same model, device, count and volumes."""
from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.http import urlencode

from catalog.models import HardwareSpec
from recommend.selectors import hardware_spec_list, language_models, priced_models
from scoring.errors import InputError
from scoring.fit import MODEL_PRESETS_BY_SLUG, PRESETS_BY_CATALOG_MODEL
from scoring.profile import HARDWARE_CLASSES_BY_SLUG, MAX_DEVICES, hardware_class_of

# The model the answer starts from when none is chosen: the one every provider in the catalog prices.
DEFAULT_MODEL = "gpt-oss-120b"
# Answers with no device of their own (laptops, CPU servers, Intel, browsers, hosted only): the fit answer
# shows what the model needs on the GPU the catalog's providers rent, one H100, and says so.
REFERENCE_DEVICE = ("nvidia-h100-sxm", 1)


@dataclass(frozen=True)
class Hardware:
    """The visitor's hardware: the wizard class, the catalog device if they named one, and how many."""

    answer: str
    device: HardwareSpec | None = None
    count: int = 0

    @property
    def label(self) -> str:
        if self.device is None:
            return HARDWARE_CLASSES_BY_SLUG[self.answer].label
        return f"{self.count}× {self.device.name}"


def device_class(spec: HardwareSpec, count: int) -> str | None:
    """The wizard answer `count` of a catalog device is, from its hardware target, generation and segment."""
    target = spec.hardware_target.slug if spec.hardware_target_id else ""
    return hardware_class_of(target=target, generation=spec.generation, datacenter=spec.is_datacenter, devices=count)


def hardware_resolve(*, hardware: str, gpu_count: int | None) -> Hardware:
    """A class slug or a catalog device slug; a bad value raises InputError naming the field."""
    if gpu_count is not None and not 1 <= gpu_count <= MAX_DEVICES:
        raise InputError({"gpu_count": f"Must be between 1 and {MAX_DEVICES}."})
    if hardware in HARDWARE_CLASSES_BY_SLUG:
        return Hardware(hardware, None, gpu_count or 0)
    spec = next((spec for spec in hardware_spec_list() if spec.slug == hardware), None)
    if spec is None:
        raise InputError({"hardware": (
            f"Unknown hardware {hardware!r}: give one of the wizard's answers "
            f"({', '.join(HARDWARE_CLASSES_BY_SLUG)}) or a device slug from /api/v1/hardware/specs/."
        )})
    count = gpu_count or 1
    answer = device_class(spec, count)
    if answer is None:
        raise InputError({"hardware": f"{spec.name} is in the catalog but matches none of the wizard's answers."})
    return Hardware(answer, spec, count)


def device_choices() -> list[tuple[str, str]]:
    """The catalog devices the wizard accepts, as (slug, name) in catalog order."""
    return [(spec.slug, spec.name) for spec in hardware_spec_list() if device_class(spec, 1) is not None]


def class_devices(answer: str) -> tuple[str, ...]:
    """Slugs of the catalog devices a class answer covers (at the class's own device count)."""
    count = HARDWARE_CLASSES_BY_SLUG[answer].reference_count
    return tuple(spec.slug for spec in hardware_spec_list() if device_class(spec, count) == answer)


def model_choices() -> list[tuple[str, str]]:
    return [(model.slug, model.name) for model in language_models()]


def model_resolve(model: str | None) -> str:
    """Any catalog model's slug (the default when none); an unknown one raises InputError naming the field."""
    if not model:
        return DEFAULT_MODEL
    known = [slug for slug, _ in model_choices()]
    if model not in known and model != DEFAULT_MODEL:
        raise InputError({"model": f"Unknown model {model!r}: give a model slug from /api/v1/models/."})
    return model


def calculator_links(*, profile, hardware: Hardware, model: str, volumes: dict) -> dict:
    """/fit/, /break-even/ and /cost/ answers for the same model, device, count and volumes.

    The device is the one named, else the class's reference device (the one its recipe names), else one
    H100 (said so on the page). A link is left out when its page could not answer: the calculator has no
    geometry for the model, the catalog lacks the device, or no provider prices the model.
    """
    specs = {spec.slug: spec for spec in hardware_spec_list()}
    names = dict(model_choices())
    klass = HARDWARE_CLASSES_BY_SLUG[profile.hardware]
    if hardware.device is not None:
        device, count, own = hardware.device.slug, hardware.count, True
    elif klass.reference_device:
        device, count, own = klass.reference_device, hardware.count or klass.reference_count, True
    else:
        (device, count), own = REFERENCE_DEVICE, False
    spec = specs.get(device)
    preset = PRESETS_BY_CATALOG_MODEL.get(model) or MODEL_PRESETS_BY_SLUG.get(model)
    links: dict = {"model": model, "model_name": names.get(model, model), "hardware": device, "gpu_count": count,
                   "fit": "", "fit_hardware": "", "fit_reference": not own, "fit_missing_model": preset is None,
                   "break_even": "", "cost": ""}
    if spec is not None and preset is not None:
        context = min(profile.context_tokens, preset.max_context_tokens)
        fit = {"model": preset.slug, "weight_format": preset.native_format, "hardware": device, "devices": count,
               "concurrency": profile.concurrency, "context_tokens": context}
        links.update(fit=f"{reverse('recommend:fit')}?{urlencode(fit)}#result",
                     fit_hardware=f"{count}× {spec.name}" if count > 1 else spec.name,
                     fit_context=context, fit_context_capped=context < profile.context_tokens)
    priced = [priced_model.slug for priced_model in priced_models()]
    if priced:
        break_even = {**volumes, "gpu_count": count, "model": model if model in priced else priced[0]}
        links["break_even_model_priced"] = model in priced
        links["break_even"] = f"{reverse('recommend:break_even')}?{urlencode(break_even)}#result"
    if spec is not None:
        links["cost"] = "/cost/?" + urlencode({"model": model, "hardware": device, "gpu_count": count})
        links["cost_hardware"] = f"{count}× {spec.name}"
    return links

"""What is known about each inference engine and hosted provider, every fact tied to a dated source."""
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from core.models import TimeStampedModel
from scoring.profile import GPU_GENERATIONS
from scoring.ranking import DocumentedCheck
from scoring.vocabulary import COMPAT_CHECKS, DOCUMENTED_OUTCOMES, REPORTED_METRICS


class Source(TimeStampedModel):
    """A document a fact comes from: a vendor page, a repository, or one of the project's seed texts."""

    key = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=300)
    url = models.URLField(max_length=500, blank=True)
    publisher = models.CharField(max_length=200, blank=True)
    verified_on = models.DateField(null=True, blank=True, help_text="When the fact was last checked against it.")
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.title


class Licence(TimeStampedModel):
    spdx_id = models.CharField(max_length=80, unique=True, help_text='SPDX id, or "proprietary-service".')
    name = models.CharField(max_length=200)
    is_open_source = models.BooleanField(default=False)
    url = models.URLField(max_length=500, blank=True)

    class Meta:
        ordering = ["spdx_id"]

    def __str__(self) -> str:
        return self.spdx_id


class HardwareTarget(TimeStampedModel):
    """A family of hardware an engine can run on (NVIDIA CUDA, Apple silicon, x86 CPU, ...)."""

    class Category(models.TextChoices):
        GPU = "gpu", "GPU"
        CPU = "cpu", "CPU"
        APPLE = "apple", "Apple silicon"
        ACCELERATOR = "accelerator", "Accelerator / NPU"
        CUSTOM_CHIP = "custom_chip", "Provider's own chip"
        CLIENT = "client", "Browser / mobile / desktop"

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    vendor = models.CharField(max_length=80, blank=True)
    category = models.CharField(max_length=20, choices=Category.choices)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class QuantFormat(TimeStampedModel):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    hardware_requirement = models.CharField(
        max_length=300, blank=True, help_text="Hardware needed for native speed, e.g. 'Ada or Hopper or newer'."
    )
    bits_per_weight = models.DecimalField(max_digits=5, decimal_places=3, null=True, blank=True)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiSurface(TimeStampedModel):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Feature(TimeStampedModel):
    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class ToolQuerySet(models.QuerySet):
    def ranked(self):
        """Rated tools by rating (seed rank breaks ties), then the unrated ones by name."""
        return self.order_by(
            models.F("rating").desc(nulls_last=True), models.F("rank").asc(nulls_last=True), "name"
        )


class Tool(TimeStampedModel):
    class Kind(models.TextChoices):
        ENGINE = "engine", "Self-hosted engine"
        PROVIDER = "provider", "Hosted provider"
        DESKTOP_APP = "desktop_app", "Desktop app"
        ORCHESTRATION = "orchestration", "Orchestration layer"
        RUNTIME = "runtime", "Other runtime"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    family = models.CharField(max_length=120, blank=True, help_text="e.g. 'llama.cpp / GGUF', 'vLLM-based'.")
    summary = models.TextField(blank=True, help_text="What the tool is, in one or two sentences.")
    rating = models.DecimalField(
        max_digits=2,
        decimal_places=1,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("5"))],
        help_text="Only where a source rates the tool; never invented.",
    )
    rating_source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    rank = models.PositiveIntegerField(null=True, blank=True, help_text="Position in the rated comparison.")
    verdict = models.TextField(blank=True)
    ideal_for = models.TextField(blank=True)
    pricing_summary = models.TextField(blank=True)
    licence = models.ForeignKey(Licence, null=True, blank=True, on_delete=models.PROTECT, related_name="tools")
    repository_url = models.URLField(max_length=500, blank=True)
    website_url = models.URLField(max_length=500, blank=True)
    last_verified = models.DateField(null=True, blank=True)
    latest_version = models.CharField(
        max_length=60, blank=True, help_text="The newest release a source states, to tell when evidence is older."
    )
    latest_version_released_on = models.DateField(null=True, blank=True)
    latest_version_source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    sources = models.ManyToManyField(Source, blank=True, related_name="tools")
    hardware = models.ManyToManyField(HardwareTarget, through="HardwareSupport", related_name="tools")
    quant_formats = models.ManyToManyField(QuantFormat, through="ToolQuantFormat", related_name="tools")
    api_surfaces = models.ManyToManyField(ApiSurface, through="ToolApiSurface", related_name="tools")
    features = models.ManyToManyField(Feature, through="ToolFeature", related_name="tools")

    objects = ToolQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open_source(self) -> bool:
        return bool(self.licence and self.licence.is_open_source)


class PriceItem(TimeStampedModel):
    """One price a source states: per-token, hourly, monthly, a credit, a free tier, a discount."""

    class Unit(models.TextChoices):
        PER_MTOK = "per_mtok", "USD per 1M tokens (input / output)"
        PER_HOUR = "per_hour", "USD per hour"
        PER_MONTH = "per_month", "USD per month"
        PER_AUDIO_HOUR = "per_audio_hour", "USD per hour of audio"
        PER_MTOK_TRAINING = "per_mtok_training", "USD per 1M training tokens"
        CREDIT = "credit", "One-off credit / minimum purchase"
        DISCOUNT = "discount", "Discount"
        FREE = "free", "Free"
        LIMIT = "limit", "Usage limit"
        QUOTE = "quote", "On request"

    class Tier(models.TextChoices):
        ON_DEMAND = "on_demand", "On demand"
        BATCH = "batch", "Batch"
        DEDICATED = "dedicated", "Dedicated"
        INTERRUPTIBLE = "interruptible", "Interruptible"
        SUBSCRIPTION = "subscription", "Subscription"
        FREE = "free", "Free tier"
        TRIAL = "trial", "Trial"
        PREPAID = "prepaid", "Prepaid"
        FINE_TUNING = "fine_tuning", "Fine-tuning"
        ENTERPRISE = "enterprise", "Enterprise"

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="price_items")
    item = models.CharField(max_length=160, help_text="Model, GPU SKU or plan the price applies to.")
    unit = models.CharField(max_length=24, choices=Unit.choices)
    tier = models.CharField(max_length=20, choices=Tier.choices, default=Tier.ON_DEMAND)
    input_usd_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    output_usd_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    amount_usd = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True,
        help_text="Hourly, monthly, per-audio-hour, per-training-token or credit amount, by unit.",
    )
    discount_percent = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    is_lower_bound = models.BooleanField(default=False, help_text="The source says 'from' this price.")
    notes = models.CharField(max_length=400, blank=True)
    position = models.PositiveIntegerField(default=0)
    verified_on = models.DateField(null=True, blank=True)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="price_items")
    model = models.ForeignKey(
        "LanguageModel", null=True, blank=True, on_delete=models.PROTECT, related_name="price_items",
        help_text="The model a per-token price is for, so prices of different models are never compared.",
    )

    class Meta:
        ordering = ["tool", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tool", "item", "unit", "tier"], name="price_item_unique_per_tool")
        ]

    def __str__(self) -> str:
        return f"{self.tool}: {self.item} ({self.get_unit_display()})"


class HardwareSupport(TimeStampedModel):
    class Level(models.TextChoices):
        NATIVE = "native", "Native"
        PARTIAL = "partial", "Partial / experimental"
        PLUGIN = "plugin", "Via plugin"
        PROVIDER = "provider", "Runs on (hosted)"

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="hardware_support")
    hardware = models.ForeignKey(HardwareTarget, on_delete=models.PROTECT, related_name="support")
    level = models.CharField(max_length=12, choices=Level.choices, default=Level.NATIVE)
    notes = models.CharField(max_length=400, blank=True)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["hardware__position", "hardware__name"]
        constraints = [models.UniqueConstraint(fields=["tool", "hardware"], name="hardware_support_unique")]


class ToolQuantFormat(TimeStampedModel):
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="quant_format_support")
    quant_format = models.ForeignKey(QuantFormat, on_delete=models.PROTECT, related_name="support")
    notes = models.CharField(max_length=400, blank=True)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["quant_format__name"]
        constraints = [models.UniqueConstraint(fields=["tool", "quant_format"], name="tool_quant_format_unique")]


class ToolApiSurface(TimeStampedModel):
    CheckOutcome = models.TextChoices(
        "CheckOutcome", [(outcome.value.upper(), (outcome.value, outcome.label)) for outcome in DOCUMENTED_OUTCOMES]
    )

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="api_surface_support")
    api_surface = models.ForeignKey(ApiSurface, on_delete=models.PROTECT, related_name="support")
    gaps = models.TextField(blank=True, help_text="Documented deviations from the API it claims to speak.")
    checks = models.JSONField(
        default=dict, blank=True,
        help_text="Compat check name → documented outcome (supported, partial, ignored, unsupported, rejected) as "
        "stated by this row's source, or a mapping: outcome, and optionally source (a source key), model (a model "
        "slug the statement is limited to), not_with (check names it cannot be combined with) and note.",
    )
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    def documented_checks(self) -> list[DocumentedCheck]:
        """Every documented check of the row, each with the key of the source that states it. Call it on a row
        fetched with its source and API surface."""
        default_source = self.source.key if self.source_id else ""
        return [DocumentedCheck.parse(name, value, source_key=default_source, surface=self.api_surface.name)
                for name, value in (self.checks or {}).items()]

    def clean(self) -> None:
        super().clean()
        if not isinstance(self.checks, dict):
            raise ValidationError({"checks": "Expected a mapping of check name to outcome."})
        try:
            entries = [DocumentedCheck.parse(name, value, source_key="") for name, value in self.checks.items()]
        except ValueError as error:
            raise ValidationError({"checks": str(error)}) from error
        outcomes = set(self.CheckOutcome.values)
        bad = {entry.check: entry.outcome for entry in entries if entry.outcome not in outcomes}
        if bad:
            raise ValidationError({"checks": f"Unknown outcome(s) {bad}; use one of: {', '.join(sorted(outcomes))}."})
        unknown = sorted({name for entry in entries for name in (entry.check, *entry.not_with)} - set(COMPAT_CHECKS))
        if unknown:
            raise ValidationError({"checks": f"Unknown check name(s) {unknown}."})
        if any(not entry.source_key for entry in entries) and self.source_id is None:
            raise ValidationError({"checks": "Documented check outcomes need the source that states them."})
        missing = {entry.source_key for entry in entries if entry.source_key} - set(
            Source.objects.filter(key__in={entry.source_key for entry in entries}).values_list("key", flat=True))
        if missing:
            raise ValidationError({"checks": f"Unknown source key(s) {sorted(missing)}."})
        models_named = {entry.model for entry in entries if entry.model}
        missing = models_named - set(LanguageModel.objects.filter(slug__in=models_named).values_list("slug", flat=True))
        if missing:
            raise ValidationError({"checks": f"Unknown model slug(s) {sorted(missing)}."})

    class Meta:
        ordering = ["api_surface__name"]
        constraints = [models.UniqueConstraint(fields=["tool", "api_surface"], name="tool_api_surface_unique")]


class ToolFeature(TimeStampedModel):
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="feature_support")
    feature = models.ForeignKey(Feature, on_delete=models.PROTECT, related_name="support")
    notes = models.CharField(max_length=400, blank=True)
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["feature__position", "feature__name"]
        constraints = [models.UniqueConstraint(fields=["tool", "feature"], name="tool_feature_unique")]


ABSENCE_ASPECTS = ("hardware", "quant_format", "feature", "api_surface")


class DocumentedAbsence(TimeStampedModel):
    """Something a source says a tool does not do: hardware it does not run on, a format, a feature or an API it
    lacks. The tables of what a tool supports are silent about what it lacks; where no row here says "no",
    the comparison says "not stated". Exactly one of the four aspects is set."""

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="absences")
    hardware = models.ForeignKey(HardwareTarget, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    quant_format = models.ForeignKey(QuantFormat, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    feature = models.ForeignKey(Feature, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    api_surface = models.ForeignKey(ApiSurface, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    notes = models.CharField(max_length=400, blank=True)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["tool", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(hardware__isnull=False, quant_format=None, feature=None, api_surface=None)
                    | models.Q(hardware=None, quant_format__isnull=False, feature=None, api_surface=None)
                    | models.Q(hardware=None, quant_format=None, feature__isnull=False, api_surface=None)
                    | models.Q(hardware=None, quant_format=None, feature=None, api_surface__isnull=False)
                ),
                name="documented_absence_one_aspect",
            ),
            *(
                models.UniqueConstraint(fields=["tool", aspect], condition=models.Q(**{f"{aspect}__isnull": False}),
                                        name=f"documented_absence_unique_{aspect}")
                for aspect in ABSENCE_ASPECTS
            ),
        ]

    @property
    def aspect(self) -> str:
        return next(name for name in ABSENCE_ASPECTS if getattr(self, f"{name}_id") is not None)

    @property
    def subject(self) -> HardwareTarget | QuantFormat | Feature | ApiSurface:
        return getattr(self, self.aspect)

    def clean(self) -> None:
        super().clean()
        if sum(getattr(self, f"{name}_id") is not None for name in ABSENCE_ASPECTS) != 1:
            raise ValidationError(f"Name exactly one of: {', '.join(ABSENCE_ASPECTS)}.")

    def __str__(self) -> str:
        return f"{self.tool} lacks {self.subject}"


class Caveat(TimeStampedModel):
    class Severity(models.TextChoices):
        SECURITY = "security", "Security"
        WARNING = "warning", "Warning"
        EDITORIAL = "editorial", "Editorial disagreement"
        INFO = "info", "Note"

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="caveats")
    key = models.SlugField(max_length=80)
    severity = models.CharField(max_length=12, choices=Severity.choices, default=Severity.WARNING)
    title = models.CharField(max_length=200)
    body = models.TextField()
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="caveats")

    class Meta:
        ordering = ["tool", "severity", "key"]
        constraints = [models.UniqueConstraint(fields=["tool", "key"], name="caveat_unique_per_tool")]

    def __str__(self) -> str:
        return f"{self.tool}: {self.title}"


class UseCase(TimeStampedModel):
    class Group(models.TextChoices):
        WHERE_IT_FITS = "where_it_fits", "Where this step fits"
        FINAL_MAP = "final_map", "Opinionated map"
        HARDWARE_RECIPE = "hardware_recipe", "Hardware recipe"

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    question = models.CharField(max_length=300)
    group = models.CharField(max_length=20, choices=Group.choices)
    summary = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)
    sources = models.ManyToManyField(Source, blank=True, related_name="use_cases")

    class Meta:
        ordering = ["group", "position", "title"]

    def __str__(self) -> str:
        return self.title


class UseCaseRecommendation(TimeStampedModel):
    """One tool named for a use case; a source's listing that the project does not endorse is kept, unrecommended."""

    use_case = models.ForeignKey(UseCase, on_delete=models.CASCADE, related_name="recommendations")
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="use_case_recommendations")
    position = models.PositiveIntegerField(default=0)
    reason = models.TextField()
    is_recommended = models.BooleanField(default=True)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["use_case", "position"]
        constraints = [models.UniqueConstraint(fields=["use_case", "tool"], name="use_case_tool_unique")]


class HardwareSpec(TimeStampedModel):
    """Memory and bandwidth of one device, for the fit calculator."""

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    vendor = models.CharField(max_length=80)
    hardware_target = models.ForeignKey(
        HardwareTarget, null=True, blank=True, on_delete=models.SET_NULL, related_name="specs"
    )
    memory_gb = models.DecimalField(max_digits=7, decimal_places=1, help_text="Device memory in GB.")
    bandwidth_gb_s = models.DecimalField(max_digits=8, decimal_places=1, help_text="Memory bandwidth in GB/s.")
    memory_kind = models.CharField(max_length=40, blank=True, help_text="HBM3, GDDR7, unified LPDDR5, ...")
    is_unified_memory = models.BooleanField(default=False)
    generation = models.CharField(
        max_length=20, choices=GPU_GENERATIONS, blank=True,
        help_text="The GPU generation: which weight formats it runs natively, and which wizard answer it is.",
    )
    is_datacenter = models.BooleanField(default=False, help_text="A datacenter accelerator, not a consumer card.")
    notes = models.CharField(max_length=300, blank=True)
    position = models.PositiveIntegerField(default=0)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="hardware_specs")

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class LanguageModel(TimeStampedModel):
    """A model that engines run and providers serve (gpt-oss-120b, ...), described from its model card."""

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=120)
    publisher = models.CharField(max_length=120, help_text="Who trained and released the model.")
    summary = models.TextField(blank=True)
    params_total_b = models.DecimalField(
        max_digits=7, decimal_places=1, null=True, blank=True, help_text="Total parameters, in billions."
    )
    params_active_b = models.DecimalField(
        max_digits=7, decimal_places=1, null=True, blank=True,
        help_text="Parameters active per token (mixture-of-experts models), in billions.",
    )
    context_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Native context length.")
    licence = models.ForeignKey(Licence, null=True, blank=True, on_delete=models.PROTECT, related_name="models")
    weights_url = models.URLField(max_length=500, blank=True)
    position = models.PositiveIntegerField(default=0)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="models")

    class Meta:
        ordering = ["position", "name"]
        verbose_name = "model"

    def __str__(self) -> str:
        return self.name


class ModelOffering(TimeStampedModel):
    """A tool serving (provider) or running (engine) one model.

    Its price is the tool's on-demand per-token price item for the same model, so a price has one owner.
    """

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="model_offerings")
    model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="offerings")
    api_model_id = models.CharField(max_length=160, blank=True, help_text="The id the tool's API expects.")
    context_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Context length the tool serves, where it states one."
    )
    notes = models.CharField(max_length=400, blank=True)
    verified_on = models.DateField(null=True, blank=True)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="model_offerings")

    class Meta:
        ordering = ["model__position", "model__name", "tool__name"]
        constraints = [models.UniqueConstraint(fields=["tool", "model"], name="model_offering_unique")]

    def __str__(self) -> str:
        return f"{self.tool} serves {self.model}"


class ReportedFigure(TimeStampedModel):
    """A figure a third party published (never measured here): kept with its publisher, link and dates."""

    Metric = models.TextChoices(
        "Metric", [(metric.value.upper(), (metric.value, metric.label)) for metric in REPORTED_METRICS]
    )
    UNITS = {metric.value: metric.unit for metric in REPORTED_METRICS}

    key = models.SlugField(max_length=120, unique=True)
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="reported_figures")
    model = models.ForeignKey(
        LanguageModel, null=True, blank=True, on_delete=models.CASCADE, related_name="reported_figures",
        help_text="Empty when the publisher does not name the model.",
    )
    hardware = models.ForeignKey(
        HardwareSpec, null=True, blank=True, on_delete=models.PROTECT, related_name="reported_figures",
        help_text="The device an engine figure was obtained on.",
    )
    device_count = models.PositiveSmallIntegerField(null=True, blank=True, help_text="How many of that device.")
    metric = models.CharField(max_length=32, choices=Metric.choices)
    value = models.DecimalField(max_digits=12, decimal_places=4)
    is_approximate = models.BooleanField(default=False, help_text='The publisher says "about" this value.')
    concurrency = models.PositiveIntegerField(
        null=True, blank=True, help_text="Concurrent requests behind a throughput figure, when stated."
    )
    workload = models.TextField(blank=True, help_text="The workload as the publisher states it.")
    publisher = models.CharField(max_length=200)
    url = models.URLField(max_length=500)
    observed_on = models.DateField(help_text="When the publisher observed or published the figure.")
    verified_on = models.DateField(help_text="When the figure was last checked against the page.")
    source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.PROTECT, related_name="reported_figures",
        help_text="The catalog source that quotes the figure, when it came through one (a seed).",
    )
    notes = models.CharField(max_length=400, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "key"]

    def __str__(self) -> str:
        return f"{self.tool}: {self.get_metric_display()} {self.value} {self.unit} ({self.publisher})"

    @property
    def unit(self) -> str:
        return self.UNITS[self.metric]

    @property
    def is_self_reported(self) -> bool:
        """The tool's own headline figure (Groq's "~500 tok/s"), not a benchmark of it: the publisher is the tool.
        Read it on a figure fetched with its tool."""
        return self.publisher == self.tool.name

    def clean(self) -> None:
        super().clean()
        if self.device_count is not None and self.hardware_id is None:
            raise ValidationError({"device_count": "A device count needs the hardware it counts."})
        if self.concurrency is not None and self.metric != self.Metric.THROUGHPUT:
            raise ValidationError({"concurrency": "Only a throughput figure is stated at a concurrency."})


class ChangeQuerySet(models.QuerySet):
    def for_listing(self):
        return self.select_related("tool", "model", "hardware", "source").order_by("-recorded_at", "-id")


class Change(models.Model):
    """One dated change of what the site shows: a price, a release, a licence, a documented gap, a rating, newly
    published evidence, or a measured regression or recovery. Written by the services that write (catalog edits
    through the API and the admin, and the fixture loader, all through the audit trail; probe runs for the measured
    kinds), never edited afterwards."""

    class Kind(models.TextChoices):
        PRICE = "price", "Price"
        RELEASE = "release", "Release"
        LICENCE = "licence", "Licence"
        GAP = "gap", "Documented gap"
        RATING = "rating", "Rating"
        EVIDENCE = "evidence", "Published evidence"
        REGRESSION = "regression", "Measured regression"
        RECOVERY = "recovery", "Measured recovery"

    kind = models.CharField(max_length=12, choices=Kind.choices, db_index=True)
    recorded_at = models.DateTimeField(default=timezone.now, db_index=True)
    effective_on = models.DateField(
        null=True, blank=True, help_text="When the change took effect, where its source gives the date."
    )
    title = models.CharField(max_length=300)
    subject = models.CharField(
        max_length=200, blank=True, help_text="What changed within the tool: a price item, a check, a metric."
    )
    before = models.JSONField(null=True, blank=True, help_text="{field: value} before; null for something new.")
    after = models.JSONField(null=True, blank=True, help_text="{field: value} after; null for something removed.")
    tool = models.ForeignKey(Tool, null=True, blank=True, on_delete=models.CASCADE, related_name="changes")
    model = models.ForeignKey(
        "LanguageModel", null=True, blank=True, on_delete=models.CASCADE, related_name="changes"
    )
    hardware = models.ForeignKey(
        HardwareTarget, null=True, blank=True, on_delete=models.CASCADE, related_name="changes"
    )
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes")
    url = models.CharField(
        max_length=500, blank=True, help_text="Where the change is seen or measured: a path on this site or a link."
    )
    audit_entry = models.ForeignKey(
        "core.AuditEntry", null=True, blank=True, on_delete=models.SET_NULL, related_name="site_changes",
        help_text="The catalog write this change was read from (who made it, every field it touched).",
    )
    series = models.CharField(
        max_length=200, blank=True, db_index=True,
        help_text="A measured series (target, workload, concurrency, metric) whose regressions and recoveries pair.",
    )

    objects = ChangeQuerySet.as_manager()

    class Meta:
        ordering = ["-recorded_at", "-id"]

    def __str__(self) -> str:
        return self.title

"""``agy models`` output in each form agy has printed (docs/wire.md §9), as table rows."""

from __future__ import annotations

import pytest

from omnigent_agy.models.agy_models import (
    ListedModel,
    ModelsForm,
    ModelsListing,
    parse_models_output,
)

HIGH = ListedModel("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)", "Advanced reasoning")
FLASH = ListedModel("gemini-3-flash", "Gemini 3 Flash")

TABLE = (
    "Fetching available models...\n"
    "gemini-3.1-pro-high\tGemini 3.1 Pro (High) · Advanced reasoning\n"
    "gemini-3-flash\tGemini 3 Flash\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(TABLE, ModelsListing(ModelsForm.TABLE, (HIGH, FLASH)), id="table"),
        pytest.param(
            TABLE.replace("\n", "\r\n"),
            ModelsListing(ModelsForm.TABLE, (HIGH, FLASH)),
            id="table-crlf",
        ),
        pytest.param(
            "\x1b[2mFetching available models...\x1b[0m\n" + TABLE.split("\n", 1)[1],
            ModelsListing(ModelsForm.TABLE, (HIGH, FLASH)),
            id="table-coloured-preamble",
        ),
        pytest.param(
            TABLE.split("\n", 1)[1],
            ModelsListing(ModelsForm.TABLE, (HIGH, FLASH)),
            id="table-without-preamble",
        ),
        pytest.param(
            "Fetching available models...\ngemini-3.1-pro-high\tGemini 3.1 Pro (High) · a · b\n",
            ModelsListing(
                ModelsForm.TABLE,
                (ListedModel("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)", "a · b"),),
            ),
            id="table-description-with-the-separator",
        ),
        pytest.param(
            "gemini-3.1-pro-high\ngemini-3-flash\n",
            ModelsListing(
                ModelsForm.IDS,
                (ListedModel("gemini-3.1-pro-high"), ListedModel("gemini-3-flash")),
            ),
            id="bare-ids",
        ),
        pytest.param(
            "Fetching available models...\n  gemini-3-flash  \n\n",
            ModelsListing(ModelsForm.IDS, (ListedModel("gemini-3-flash"),)),
            id="bare-ids-with-preamble-and-blanks",
        ),
        pytest.param(
            '[{"id": "gemini-3.1-pro-high", "displayName": "Gemini 3.1 Pro (High)",'
            ' "description": "Advanced reasoning"}, {"id": "gemini-3-flash",'
            ' "displayName": "Gemini 3 Flash"}]',
            ModelsListing(ModelsForm.JSON, (HIGH, FLASH)),
            id="json-list",
        ),
        pytest.param(
            'Fetching available models...\n{"models": [{"id": "gemini-3-flash",'
            ' "displayName": "Gemini 3 Flash", "extra": {"x": 1}}]}',
            ModelsListing(ModelsForm.JSON, (FLASH,)),
            id="json-under-models-after-preamble",
        ),
        pytest.param(
            '{"models": {"gemini-3-flash": {"display_name": "Gemini 3 Flash"}}}',
            ModelsListing(ModelsForm.JSON, (FLASH,)),
            id="json-keyed-by-id",
        ),
        pytest.param(
            '["gemini-3-flash"]',
            ModelsListing(ModelsForm.JSON, (ListedModel("gemini-3-flash"),)),
            id="json-list-of-ids",
        ),
        pytest.param(
            '[{"id": "gemini-3-flash"}, {"displayName": "no id"}, 7]',
            ModelsListing(
                ModelsForm.JSON,
                (ListedModel("gemini-3-flash"),),
                ('{"displayName": "no id"}', "7"),
            ),
            id="json-entries-without-an-id-kept-unread",
        ),
        pytest.param(
            '{"models": "none"}',
            ModelsListing(ModelsForm.JSON, (), ('{"models": "none"}',)),
            id="json-of-another-shape",
        ),
        pytest.param("", ModelsListing(ModelsForm.EMPTY, ()), id="empty"),
        pytest.param(
            "Fetching available models...\n",
            ModelsListing(ModelsForm.EMPTY, ()),
            id="only-preamble",
        ),
        pytest.param(
            "gemini-3-flash\nthis is not a model\n",
            ModelsListing(
                ModelsForm.IDS, (ListedModel("gemini-3-flash"),), ("this is not a model",)
            ),
            id="prose-kept-unread",
        ),
        pytest.param(
            "[not json\ngemini-3-flash\n",
            ModelsListing(ModelsForm.IDS, (ListedModel("gemini-3-flash"),), ("[not json",)),
            id="broken-json-read-as-lines",
        ),
    ],
)
def test_agy_models_output(text: str, expected: ModelsListing) -> None:
    assert parse_models_output(text) == expected


def test_names() -> None:
    assert HIGH.shown_name == "Gemini 3.1 Pro (High)"
    assert ListedModel("gemini-3-flash").shown_name == "gemini-3-flash"
    assert parse_models_output(TABLE).ids == ("gemini-3.1-pro-high", "gemini-3-flash")

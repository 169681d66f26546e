"""Smoke: the main bank routes through chalice.test.Client under moto."""


def test_save_list_get(api):
    s, b = api.post("/v1/banks/main/memories", {"text": "User prefers  short   names", "tags": ["style"]})
    assert s == 201, b
    assert b["memory"]["id"] == "fp37dab55090b26303"
    s, b = api.post("/v1/banks/main/memories", {"text": "user prefers short names"})
    assert s == 200 and b["created"] is False and b["memory"]["corroboration"] == 1
    s, b = api.get("/v1/banks/main/memories")
    assert s == 200 and b["total"] == 1
    s, b = api.get("/v1/banks")
    assert b["banks"][0]["memories"] == 1

#include "transient/report/svg_raster.h"

#include <cairo.h>
#include <librsvg/rsvg.h>

#include <cctype>
#include <cmath>
#include <memory>

#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::report {
namespace {

struct GObjectUnref {
  void operator()(RsvgHandle* handle) const { g_object_unref(handle); }
};
struct SurfaceDestroy {
  void operator()(cairo_surface_t* surface) const { cairo_surface_destroy(surface); }
};
struct ContextDestroy {
  void operator()(cairo_t* context) const { cairo_destroy(context); }
};

cairo_status_t append_to_string(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

[[noreturn]] void fail(const std::string& name, GError* error, const std::string& what) {
  std::string message = what;
  if (error != nullptr) {
    message += ": " + std::string(error->message);
    g_error_free(error);
  }
  throw InputError(name, 0, message);
}

}  // namespace

std::string svg_to_png(const std::string& svg, const std::string& name, double scale) {
  TRANSIENT_CHECK_GT(scale, 0.0);
  GError* error = nullptr;
  std::unique_ptr<RsvgHandle, GObjectUnref> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error));
  if (!handle) fail(name, error, "not an SVG document");

  gdouble width_px = 0.0, height_px = 0.0;
  if (!rsvg_handle_get_intrinsic_size_in_pixels(handle.get(), &width_px, &height_px) ||
      width_px <= 0.0 || height_px <= 0.0) {
    fail(name, nullptr, "the SVG document has no width and height in pixels");
  }
  const int width = static_cast<int>(std::ceil(width_px * scale));
  const int height = static_cast<int>(std::ceil(height_px * scale));
  std::unique_ptr<cairo_surface_t, SurfaceDestroy> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height));
  std::unique_ptr<cairo_t, ContextDestroy> context(cairo_create(surface.get()));
  cairo_set_source_rgb(context.get(), 1.0, 1.0, 1.0);
  cairo_paint(context.get());
  const RsvgRectangle viewport{0.0, 0.0, static_cast<double>(width), static_cast<double>(height)};
  if (!rsvg_handle_render_document(handle.get(), context.get(), &viewport, &error)) {
    fail(name, error, "cannot render the SVG document");
  }
  std::string png;
  if (cairo_surface_write_to_png_stream(surface.get(), append_to_string, &png) !=
      CAIRO_STATUS_SUCCESS) {
    fail(name, nullptr, "cannot encode the picture as PNG");
  }
  return png;
}

bool wants_png(const std::string& path) {
  if (path.size() < 4) return false;
  return same_ignoring_case(std::string_view(path).substr(path.size() - 4), ".png");
}

}  // namespace transient::report
